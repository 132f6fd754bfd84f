// A child process whose stdout and stderr come back through one pipe, so that a launcher
// can merge the logs of many children with a prefix per child.
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace trib::cluster {

class ChildProcess {
 public:
  // Starts argv[0] (a path) with argv, plus `env` added to this process's environment.
  // Throws IoError naming the program if it cannot be started.
  ChildProcess(std::string name, const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);
  // Runs `body` in a forked child, without exec: it starts with this process's memory as it
  // was (copy-on-write), so what the parent loaded is there at no cost (a sweep's dataset:
  // sweep/trial_fork.h). Its return value is the exit status; an exception is printed as
  // "trib: error: ..." and exits 1. Only for a parent that has started no compute threads
  // (OpenMP's would be missing in the child) and whose other threads hold no locks.
  ChildProcess(std::string name, const std::function<int()>& body);
  ~ChildProcess();  // kills the child if it still runs
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  const std::string& name() const { return name_; }
  pid_t pid() const { return pid_; }
  int output_fd() const { return out_fd_; }

  // Reads what is available (non-blocking) and returns complete lines; at end of output
  // the last partial line too.
  std::vector<std::string> read_lines();
  bool output_closed() const { return out_fd_ < 0; }

  // Non-blocking: the exit status once the child has ended.
  std::optional<int> poll_exit();
  bool exited() const { return status_.has_value(); }
  // "exited with status 3", "was killed by signal 9 (Killed)".
  std::string describe_exit() const;
  bool succeeded() const;
  // The signal that ended the child (kill -9: 9); 0 while it runs or when it exited.
  int term_signal() const;
  // The status it exited with; -1 while it runs or when a signal ended it.
  int exit_status() const;
  // Once it has exited: its CPU time (user + system, with its own children's), in seconds.
  double cpu_s() const { return cpu_s_; }

  void signal(int sig);

 private:
  std::string name_;
  pid_t pid_ = -1;
  int out_fd_ = -1;
  std::string partial_;
  std::optional<int> status_;
  double cpu_s_ = 0;
};

}  // namespace trib::cluster
