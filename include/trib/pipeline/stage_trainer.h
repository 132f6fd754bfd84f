// One pipeline stage's whole run, as a process of `trib train` (or a thread in tests): agree
// on the partition, connect to the neighbouring stages, restore from the newest checkpoint
// when resuming, train every step (stage 0 reads the data), evaluate on the test split at
// every report (stage 0 feeds the test batches forward, the last stage scores them), write
// this stage's checkpoint shard, and report its peak memory.
//
// The processes meet through the coordinator's key-value store (`publish`/`lookup`): the
// partition, each stage's address, the run's step count, and the checkpoint shards each stage
// wrote (the chief, stage 0 of replica 0, publishes the manifest once all are in).
//
// A lost stage of a pipeline without replicas is relaunched alone (by `trib train`, or by
// whoever runs `trib worker --join` again): the survivors drop their step in flight, wait
// for it, and every stage goes on from the newest checkpoint (pipeline/stage_recovery.h).
#pragma once

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "trib/collectives/group.h"
#include "trib/config/job_config.h"
#include "trib/net/transport.h"

namespace trib::pipeline {

struct StageTrainerOptions {
  config::JobConfig job;
  std::filesystem::path output;  // the run directory (checkpoints/ under it)
  bool resume = false;
  int stage = 0;
  int replica = 0;
  std::shared_ptr<net::Transport> transport;
  std::string listen = "127.0.0.1:0";
  // The address the previous stage dials, given the bound one (a wildcard bind's reachable host).
  std::function<std::string(const std::string& bound)> published;
  std::function<void(const std::string& key, const std::string& value)> publish;
  std::function<std::optional<std::string>(const std::string& key)> lookup;
  // replicas > 1: the group of this stage's copies (rank = replica).
  std::shared_ptr<collectives::Group> replica_group;
  std::chrono::milliseconds timeout{std::chrono::minutes(2)};
  std::FILE* log = stdout;
};

struct StageSummary {
  std::int64_t steps = 0;
  double test_accuracy = 0;  // the last stage's final evaluation (0 elsewhere)
  double test_loss = 0;
  double peak_activation_mb = 0;
  double parameter_mb = 0;
  double optimizer_mb = 0;
  double max_rss_mb = 0;
  double busy_s = 0, wall_s = 0;
};

StageSummary train_stage(const StageTrainerOptions& options);

// Key names in the store.
std::string partition_key();
std::string address_key(int replica, int stage, std::int64_t round = 0);

}  // namespace trib::pipeline
