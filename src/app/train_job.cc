#include "app/train_job.h"

#include "trib/train_stream/stream_trainer.h"

namespace trib::app {

train::RunSummary train_job(const train::TrainerOptions& options) {
  return options.job.data.stream() ? train_stream::train(options) : train::train(options);
}

}  // namespace trib::app
