// sweep.jsonl: one JSON object per line, appended and flushed as things happen, so that a
// crash loses at most the line being written. It is both the sweep's result and what
// --resume rebuilds the sweep from:
//   {"event":"trial","trial":3,"params":{"optimizer.lr":0.001,...}}
//   {"event":"result","trial":3,"step":100,"metric":0.81,"decision":"continue"}   (continue|stop|done|wait|promote)
// (wait: the trial waits at its rung, the promotion rule; promote: a waiting trial is promoted
// and continues from its rung's checkpoint.)
//   {"event":"end","trial":3,"state":"stopped","step":100,"metric":0.81,"note":"below the rung's cut-off 0.83"}
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "trial_record.h"
#include "trib/sweep/asha.h"

namespace trib::sweep {

class SweepLog {
 public:
  explicit SweepLog(const std::filesystem::path& path);  // appends
  void trial(const TrialRecord& t);
  void result(const TrialRecord& t, const std::string& decision);
  void end(const TrialRecord& t);

  // The trials the log describes, by id. A trial whose last decision is "wait" waits again at
  // its rung. A trial without an end or a final decision ("stop", "done") is pending again
  // (its run directory's checkpoint, if any, continues it). Results
  // at ASHA's rungs go to `asha` when given. A torn last line (a crash mid-write) is ignored.
  static std::vector<TrialRecord> replay(const std::filesystem::path& path, Asha* asha);

 private:
  void write(const std::string& line);
  std::filesystem::path path_;
  std::ofstream out_;
};

}  // namespace trib::sweep
