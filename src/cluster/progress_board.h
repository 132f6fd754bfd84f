// What a local-cluster launcher prints: its children's lines, each prefixed with the child's
// name, and on a terminal one live line for the whole job (step, images/s, loss, ETA, over
// every worker), drawn from the "@trib-progress" lines the workers emit and redrawn below
// whatever else is printed. In a log (not a terminal) there is no live line: progress lines
// are printed like any other, prefixed.
//
// A child's error line ("trib: error: ...") is not printed but kept: the launcher reports
// the one error that stopped the job, naming its process, and not every worker's.
//
// Once the launcher is stopping the job, only the process that failed is still heard: the
// others' teardown (connections the coordinator closed) would bury the one error that counts.
// A process's death is seen by its peers' transports (a reset connection) before the
// launcher's next look at its children, so transport lines ("[trib.net]") are held for a
// moment before they are printed, and dropped if the job turns out to be stopping.
#pragma once

#include <chrono>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <string>

#include "trib/core/progress_sample.h"

namespace trib::cluster {

class ProgressBoard {
 public:
  // live: draw the live line (a terminal).
  ProgressBoard(std::FILE* out, bool live, std::chrono::milliseconds hold = std::chrono::milliseconds(500));

  // One line a child printed.
  void child_line(const std::string& child, const std::string& text);
  // A line of the launcher's own, printed above the live line. Thread-safe, as is every call.
  void print(const std::string& text);
  // A line of the launcher's own transport: held like a child's transport lines.
  void print_transport(const std::string& text);
  // Prints the held transport lines older than `hold`; the launcher calls it as it polls.
  void tick(std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());
  // From now on, drop every child's lines but `heard`'s ("": drop all), and the live line.
  void stopping(const std::string& heard);
  // Clears the live line (the job ended).
  void finish();

  // What `child` last reported as its error (without "trib: error: "); "" if nothing.
  std::string error_of(const std::string& child) const;

  // The live line as drawn now, without terminal control characters; "" before any sample.
  std::string live_line() const;

 private:
  void clear();
  void draw();
  void print_locked(const std::string& text);
  std::string live_line_locked() const;

  mutable std::mutex mu_;  // the coordinator's transport threads log through print()

  struct Held {
    std::chrono::steady_clock::time_point at;
    std::string child;  // "": the launcher's own
    std::string text;
  };

  std::FILE* out_;
  bool live_;
  std::chrono::milliseconds hold_;
  std::deque<Held> held_;
  bool drawn_ = false;
  bool stopping_ = false;
  std::string heard_;
  std::map<std::string, ProgressSample> samples_;  // by worker name
  std::map<std::string, std::string> errors_;      // by child
};

}  // namespace trib::cluster
