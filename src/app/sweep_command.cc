// `trib sweep SWEEP.yaml` and `trib plot SWEEP_DIR`: argument handling over trib_sweep.
#include <cstdio>
#include <filesystem>

#include "app/commands.h"
#include "trib/core/error.h"
#include "trib/sweep/sweep.h"
#include "trib/train/progress.h"
#include "trib/train/run_directory.h"

namespace trib::app {

int run_sweep(const SweepArgs& args) {
  sweep::SweepOptions o;
  o.config = sweep::load_sweep_config(args.config);
  TRIB_CHECK(args.resume.empty() || args.output.empty() || args.resume == args.output, InvalidArgument,
             "--resume {} and --output {} disagree: a resumed sweep continues in its own directory", args.resume,
             args.output);
  o.resume = !args.resume.empty();
  o.output = o.resume ? args.resume
             : args.output.empty() ? train::RunDirectory::default_path(o.config.name).string()
                                   : args.output;
  o.executable = std::filesystem::read_symlink("/proc/self/exe").string();
  o.interactive = train::Progress::is_terminal(stdout);
  TerminationSignal terminate;
  o.terminate = &terminate;
  sweep::SweepResult r = sweep::run_sweep(o);
  if (r.interrupted) {
    std::printf("stopped for SIGTERM: continue the sweep with `trib sweep %s --resume %s`\n", args.config.c_str(),
                o.output.c_str());
    return 0;
  }
  return r.best_trial >= 0 ? 0 : 1;
}


}  // namespace trib::app
