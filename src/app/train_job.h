// Trains a job on this process, whatever its data: files through train::train, a Kafka
// stream through train_stream::train. The one place that tells them apart, so that the
// general trainer links no Kafka client.
#pragma once

#include "trib/train/trainer.h"

namespace trib::app {

train::RunSummary train_job(const train::TrainerOptions& options);

}  // namespace trib::app
