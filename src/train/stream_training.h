// The training loop of a stream job (data.format: kafka): batches from a KafkaSource through a
// shuffle buffer, each scored before it is trained on (prequential evaluation), Kafka offsets
// in every checkpoint, and offsets committed to the group once the checkpoint is published.
// train() hands stream jobs here; the file-based loop in trainer.cc is untouched.
#pragma once

#include "trib/train/trainer.h"

namespace trib::train {

RunSummary train_stream(const TrainerOptions& options);

}  // namespace trib::train
