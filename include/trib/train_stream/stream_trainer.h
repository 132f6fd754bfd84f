// Training a stream job (data.format: kafka): the one training loop (src/train/training_loop.h)
// over a Kafka batch source, with prequential metrics and Kafka offsets in every checkpoint.
// This library links librdkafka (through trib_stream); the general trainer (trib_train) does not.
#pragma once

#include "trib/train/trainer.h"

namespace trib::train_stream {

// Trains until training.steps, or until the stream is idle for data.kafka.idle_timeout_s.
// Checks the job, the broker and the topic before the run directory is touched.
train::RunSummary train(const train::TrainerOptions& options);

}  // namespace trib::train_stream
