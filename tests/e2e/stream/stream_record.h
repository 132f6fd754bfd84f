// Test support for stream jobs that lose a worker: the events each worker applied, read back
// from its id record (data.kafka.record_ids: <run>/stream_ids/worker-<w>.txt), and the Kafka
// offsets a checkpoint holds; shared by the `trib train` and `trib coordinator` tests.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "trib/data/data_position.h"
#include "trib/stream/event_producer.h"
#include "trib/stream/stream_position.h"

namespace trib::testing {

// The settings of a `workers`-worker allreduce job of examples/stream_fraud.yaml on `bootstrap`, batch
// 1, no shuffle buffer, that records applied ids (each one a `--set` value).
inline std::vector<std::string> allreduce_stream_overrides(const std::string& bootstrap, const std::string& group,
                                                           int steps, int every, int workers = 3) {
  return {"data.kafka.bootstrap_servers=\"" + bootstrap + "\"",
          "data.kafka.record_ids=true",
          "data.kafka.shuffle_buffer=0",
          "data.kafka.idle_timeout_s=0",
          "data.kafka.group_id=" + group,
          "data.kafka.properties={\"session.timeout.ms\": \"3000\"}",
          "strategy.name=allreduce",
          "cluster.workers=" + std::to_string(workers),
          "training.batch=1",
          "training.eval_every=1000",
          "training.steps=" + std::to_string(steps),
          "training.checkpoint_every=" + std::to_string(every)};
}

// The events worker `w` applied and kept, per id: its lines "step id ..." up to `last_step`;
// a line "rewind S" (its group rolled back to checkpoint S) drops its lines for steps after S,
// and so does a second line "run ..." (the whole job restarted from checkpoint `restarted_at`).
inline void add_kept_ids(const std::filesystem::path& run_dir, int w, std::int64_t last_step,
                         std::map<std::int64_t, int>& seen, std::int64_t restarted_at = -1) {
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

// 6000 events on topic "transactions" of `bootstrap`, produced as fast as the broker takes them.
inline stream::ProduceOptions produce_options(const std::string& bootstrap) {
  stream::ProduceOptions produce;
  produce.kafka.bootstrap_servers = bootstrap;
  produce.topic = "transactions";
  produce.count = 6000;
  produce.rate = 0;  // as fast as the broker takes them
  return produce;
}

// Whether `file` (an id record) has a line for step `step` yet.
inline bool has_step(const std::filesystem::path& file, std::int64_t step) {
  const std::string prefix = std::to_string(step) + " ";
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    if (line.starts_with(prefix)) return true;
  return false;
}

// Waits (polling, up to 120 s) until `file` has a line for step `step`.
inline bool wait_for_step(const std::filesystem::path& file, std::int64_t step) {
  for (const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
       std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(std::chrono::milliseconds(2)))
    if (has_step(file, step)) return true;
  return false;
}

// How many offsets of `topic` checkpoint `step`'s "kafka" section holds as applied.
inline std::int64_t offsets_done(const std::filesystem::path& run_dir, int step, const std::string& topic) {
  for (auto& e : std::filesystem::directory_iterator(run_dir / "checkpoints")) {
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

}  // namespace trib::testing
