// One function per `trib` subcommand.
#pragma once

#include <string>
#include <vector>

namespace trib::app {

struct TrainArgs {
  std::string config;
  std::vector<std::string> overrides;
  std::string output;
  std::string resume;
};
int run_train(const TrainArgs& args);

struct EvalArgs {
  std::string config;
  std::string checkpoint;
  std::vector<std::string> overrides;
};
int run_eval(const EvalArgs& args);

int run_inspect(const std::string& path);

struct CoordinatorArgs {
  std::string config;
  std::string listen;
  std::string secret_file;
  std::string output;
  std::vector<std::string> overrides;
};
int run_coordinator(const CoordinatorArgs& args);

}  // namespace trib::app
