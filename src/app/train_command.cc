#include <cstdio>

#include "app/commands.h"
#include "trib/train/progress.h"
#include "trib/train/run_directory.h"
#include "trib/train/trainer.h"

namespace trib::app {

int run_train(const TrainArgs& args) {
  train::TrainerOptions o;
  o.job = config::load_job_config(args.config, args.overrides);
  TRIB_CHECK(args.resume.empty() || args.output.empty() || args.resume == args.output, InvalidArgument,
             "--resume {} and --output {} disagree: a resumed run continues in its own directory",
             args.resume, args.output);
  if (!args.resume.empty()) {
    o.output = args.resume;
    o.resume = true;
  } else {
    o.output = args.output.empty() ? train::RunDirectory::default_path(o.job.name) : std::filesystem::path(args.output);
  }
  o.interactive = train::Progress::is_terminal(stdout);
  train::train(o);
  return 0;
}

int run_eval(const EvalArgs& args) {
  train::EvalOptions o;
  o.job = config::load_job_config(args.config, args.overrides);
  o.checkpoint = args.checkpoint;
  train::evaluate_checkpoint(o);
  return 0;
}

}  // namespace trib::app
