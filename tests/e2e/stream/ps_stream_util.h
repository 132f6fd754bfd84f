// Helpers of the parameter-server stream e2e tests (a worker lost, or gone for good): the
// per-worker record of applied event ids (data.kafka.record_ids) and the check that every event
// was trained exactly once, the run's end included.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "e2e/stream/stream_record.h"
#include "e2e/trib_process.h"

namespace trib::testing {

inline const std::string kStreamExample = std::string(TRIB_SOURCE_DIR) + "/examples/stream_fraud.yaml";

// `trib train` of examples/stream_fraud.yaml under parameter servers on `bootstrap` into `out`:
// batch 1, no shuffle buffer, ids recorded, the job assigning the partitions, ended by 3 s of
// idleness; then `extra` (each a `--set` value).
inline std::vector<std::string> ps_stream_args(const std::filesystem::path& out, const std::string& bootstrap,
                                               const std::string& group, const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"train", kStreamExample, "--output", out.string()};
  std::vector<std::string> sets = {"data.kafka.bootstrap_servers=\"" + bootstrap + "\"", "data.kafka.record_ids=true",
                                   "data.kafka.shuffle_buffer=0", "data.kafka.idle_timeout_s=3",
                                   "data.kafka.assignment=auto", "data.kafka.group_id=" + group, "training.steps=0",
                                   "training.batch=1", "training.eval_every=1000"};
  sets.insert(sets.end(), extra.begin(), extra.end());
  for (const std::string& s : sets) {
    args.push_back("--set");
    args.push_back(s);
  }
  return args;
}

// Every id in every worker's record, whichever process of the worker wrote it: a relaunched
// worker continues at its last applied push, so nothing its lost process recorded is undone. A
// line "rewind S" (the job restored checkpoint S in place) drops the worker's lines for steps
// after S, which went to the model the restore discarded.
inline std::map<std::int64_t, int> recorded_ids(const std::filesystem::path& out, int workers, int& runs, int& rewinds) {
  std::map<std::int64_t, int> seen;
  runs = rewinds = 0;
  for (int w = 0; w < workers; ++w) {
    std::ifstream in(out / "stream_ids" / ("worker-" + std::to_string(w) + ".txt"));
    std::vector<std::pair<std::int64_t, std::int64_t>> kept;  // (step, id)
    for (std::string line; std::getline(in, line);) {
      if (line.starts_with("run ")) {
        ++runs;
        continue;
      }
      if (line.starts_with("rewind ")) {
        ++rewinds;
        const std::int64_t to = std::stoll(line.substr(7));
        std::erase_if(kept, [to](const auto& e) { return e.first > to; });
        continue;
      }
      std::istringstream ls(line);
      std::int64_t step = 0, id = 0;
      ls >> step;
      while (ls >> id) kept.push_back({step, id});
    }
    for (const auto& e : kept) ++seen[e.second];
  }
  return seen;
}

// Every one of the `n` events kept exactly once (`seen`), and the run's end says the same: the
// final checkpoint's Kafka offsets and the totals line hold each once.
inline void expect_each_event_once(const std::map<std::int64_t, int>& seen, std::int64_t n,
                                   const std::filesystem::path& out, const std::string& output) {
  EXPECT_EQ(static_cast<std::int64_t>(seen.size()), n) << output;
  int reported = 0;
  for (std::int64_t id = 0; id < n && static_cast<std::int64_t>(seen.size()) != n && reported < 20; ++id)
    if (!seen.count(id)) ADD_FAILURE() << "event " << id << " never applied (" << ++reported << ")";
  for (auto [id, times] : seen) ASSERT_EQ(times, 1) << "event " << id << " applied " << times << " times";
  const int last = newest_checkpoint(out);
  EXPECT_EQ(offsets_done(out, last, "transactions"), n) << output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(output, m, std::regex(R"(stream totals: consumed (\d+) trained (\d+))"))) << output;
  EXPECT_EQ(std::stoll(m[1]), n) << output;
  EXPECT_EQ(std::stoll(m[2]), n) << output;
}

}  // namespace trib::testing
