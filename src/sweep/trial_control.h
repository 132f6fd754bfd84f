// The line protocol between the sweep and a trial it forked (trial_fork.h), over one end of
// a socket pair each:
//   trial -> sweep   "paused"        its segment ended at its target (metrics and checkpoint
//                                    written); it waits for the decision
//   sweep -> trial   "go <steps>"    go on to <steps> in the same process
//                    "stop"          stop at the next step boundary with a checkpoint
//                    "end"           exit now (also: the sweep's end closed)
#pragma once

#include <optional>
#include <utility>
#include <string>
#include <vector>

namespace trib::sweep {

class ControlChannel {
 public:
  explicit ControlChannel(int fd) : fd_(fd) {}  // takes the descriptor
  ~ControlChannel();
  ControlChannel(const ControlChannel&) = delete;
  ControlChannel& operator=(const ControlChannel&) = delete;

  // Makes a connected pair: [0] for the sweep, [1] for the trial. IoError if it cannot.
  static std::pair<int, int> socket_pair();

  int fd() const { return fd_; }
  // Sends one line; false if the other end is gone (no SIGPIPE).
  bool send(const std::string& line);
  // The complete lines that have arrived, without waiting.
  std::vector<std::string> poll_lines();
  // Waits for the next line; nothing when the other end closed.
  std::optional<std::string> wait_line();

 private:
  enum class Read { data, nothing, closed };
  Read read_some(bool wait);
  int fd_;
  std::string partial_;
  bool closed_ = false;
};

}  // namespace trib::sweep
