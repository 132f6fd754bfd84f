// Helpers of the allreduce stream e2e tests: the job's arguments, its events, and the per-worker
// record of applied event ids (data.kafka.record_ids) that checks "every event once".
#pragma once

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "e2e/trib_process.h"
#include "trib/data/data_position.h"
#include "trib/stream/event_producer.h"
#include "trib/stream/stream_position.h"

namespace trib::stream_e2e {

namespace fs = std::filesystem;

inline const std::string kExample = std::string(TRIB_SOURCE_DIR) + "/examples/stream_fraud.yaml";

// The events worker `w` applied and kept, per id: its lines "step id ..." up to `last_step`;
// a line "rewind S" (its group rolled back to checkpoint S) drops its lines for steps after S,
// and so does a second line "run ..." (the whole job restarted from checkpoint `restarted_at`).
inline void add_kept_ids(const fs::path& run_dir, int w, std::int64_t last_step, std::map<std::int64_t, int>& seen,
                         std::int64_t restarted_at = -1) {
  std::ifstream in(run_dir / "stream_ids" / ("worker-" + std::to_string(w) + ".txt"));
  std::vector<std::pair<std::int64_t, std::int64_t>> kept;  // (step, id)
  int runs = 0;
  for (std::string line; std::getline(in, line);) {
    const bool restart = line.starts_with("run ") && ++runs > 1;
    if (line.starts_with("rewind ") || restart) {
      const std::int64_t to = restart ? restarted_at : std::stoll(line.substr(7));
      std::erase_if(kept, [to](const auto& e) { return e.first > to; });
      continue;
    }
    if (line.starts_with("run ")) continue;
    std::istringstream ls(line);
    std::int64_t step = 0, id = 0;
    ls >> step;
    while (ls >> id)
      if (step <= last_step) kept.push_back({step, id});
  }
  for (const auto& e : kept) ++seen[e.second];
}

// A `workers`-worker allreduce job on `bootstrap`, batch 1, no shuffle buffer, that records applied ids.
inline std::vector<std::string> job_args(const std::string& bootstrap, const fs::path& out,
                                         const std::string& group, int steps, int every, int workers = 3) {
  return {"train", kExample, "--output", out.string(),
          "--set", "data.kafka.bootstrap_servers=\"" + bootstrap + "\"",
          "--set", "data.kafka.record_ids=true",
          "--set", "data.kafka.shuffle_buffer=0",
          "--set", "data.kafka.idle_timeout_s=0",
          "--set", "data.kafka.group_id=" + group,
          "--set", "data.kafka.properties={\"session.timeout.ms\": \"3000\"}",
          "--set", "strategy.name=allreduce",
          "--set", "cluster.workers=" + std::to_string(workers),
          "--set", "training.batch=1",
          "--set", "training.eval_every=1000",
          "--set", "training.steps=" + std::to_string(steps),
          "--set", "training.checkpoint_every=" + std::to_string(every)};
}

inline stream::ProduceOptions produce_options(const std::string& bootstrap) {
  stream::ProduceOptions produce;
  produce.kafka.bootstrap_servers = bootstrap;
  produce.topic = "transactions";
  produce.count = 6000;
  produce.rate = 0;  // as fast as the broker takes them
  return produce;
}

// Writes the tests' events to `bootstrap`: produce_options' 6000, ids numbered from 0.
inline void produce_all(const std::string& bootstrap) {
  std::atomic<bool> stop{false};
  const stream::ProduceOptions produce = produce_options(bootstrap);
  ASSERT_EQ(stream::produce_events(produce, stop).delivered, produce.count);
}

// Waits (polling, up to 120 s) until `file` has a line for step `step`.
inline bool wait_for_step(const fs::path& file, std::int64_t step) {
  const std::string prefix = std::to_string(step) + " ";
  for (const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
       std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(std::chrono::milliseconds(2))) {
    std::ifstream in(file);
    for (std::string line; std::getline(in, line);)
      if (line.starts_with(prefix)) return true;
  }
  return false;
}

// How many offsets of `topic` checkpoint `step`'s "kafka" section holds as applied.
inline std::int64_t offsets_done(const fs::path& run_dir, int step, const std::string& topic) {
  for (auto& e : fs::directory_iterator(run_dir / "checkpoints")) {
    const std::string name = e.path().filename().string();
    if (!name.starts_with("ckpt-") || std::stoi(name.substr(5)) != step) continue;
    std::ifstream in(e.path() / "manifest.json");
    const std::string hex = nlohmann::json::parse(in).at("sections").at("kafka").at("encoded_hex").get<std::string>();
    std::string bytes;
    for (std::size_t i = 0; i + 1 < hex.size(); i += 2) bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    std::int64_t done = 0;
    for (const auto& [p, progress] : stream::progress_in(data::DataPosition::parse(bytes), topic))
      done += progress.next + progress.applied.count();
    return done;
  }
  ADD_FAILURE() << "no checkpoint " << step << " in " << run_dir;
  return -1;
}

// The run's kept events (`seen`, from add_kept_ids) are `expected` in number, each applied once;
// the last checkpoint (step `steps`) is the newest, and its Kafka offsets and the chief's
// totals line hold exactly them (events are numbered from offset 0).
inline void expect_kept_once(const fs::path& out, const std::string& output, const std::map<std::int64_t, int>& seen,
                             std::int64_t expected, int steps) {
  EXPECT_EQ(static_cast<std::int64_t>(seen.size()), expected) << output;
  for (auto [id, times] : seen) ASSERT_EQ(times, 1) << "event " << id << " applied " << times << " times";
  EXPECT_EQ(testing::newest_checkpoint(out), steps) << output;
  EXPECT_EQ(offsets_done(out, steps, "transactions"), expected)
      << "the final checkpoint's Kafka offsets hold exactly the events kept";
  std::smatch m;
  ASSERT_TRUE(std::regex_search(output, m, std::regex(R"(stream totals: consumed \d+ trained (\d+))"))) << output;
  EXPECT_EQ(std::stoll(m[1]), expected) << output;
}

}  // namespace trib::stream_e2e
