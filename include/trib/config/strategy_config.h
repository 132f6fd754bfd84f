// How workers combine their gradients (the job's `strategy:` section). Names are parsed into
// enums once, here, so that every later decision is a switch over a type, not a string
// comparison; the strategy factory (include/trib/strategy/make_strategy.h) maps them onto the
// ps and collectives libraries' own types.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace trib::config {

enum class StrategyName { local, ps, allreduce, pipeline };
// ps: sync (every worker's gradient each round), async, bounded (staleness), averaging
// (local steps, then parameters averaged every `period`).
enum class PsMode { sync, async, bounded, averaging };
// ps placement (docs/placement.md); balanced, the default: greedy, with every variable above a
// twentieth of a server's fair share of the bytes split by rows over all servers.
enum class PsPlacement { round_robin, greedy, partitioned, balanced };
// allreduce: the gradients' form on the wire.
enum class Compression { none, bf16, fp16 };
// pipeline: the order of each stage's forward and backward passes (docs/model_parallel.md).
enum class PipelineSchedule { gpipe, one_f_one_b };

std::string_view to_string(StrategyName v);
std::string_view to_string(PsMode v);
std::string_view to_string(PsPlacement v);
std::string_view to_string(Compression v);
std::string_view to_string(PipelineSchedule v);

struct StrategyConfig {
  StrategyName name = StrategyName::local;  // local | ps | allreduce | pipeline
  PsMode mode = PsMode::async;              // ps: sync | async | bounded | averaging
  PsPlacement placement = PsPlacement::balanced;  // ps: balanced | greedy | partitioned | round_robin
  int staleness = 2;                // ps bounded: steps a worker may run ahead of the slowest
  int backup_workers = 0;           // ps sync: proceed without the slowest b workers
  int period = 4;                   // ps averaging: local steps between averages
  // ps: hot backups per shard (0 or 1). With 1, server p's shard is also held by server
  // (p + 1) mod n, which takes over when p is lost (docs/fault_tolerance.md, "Hot backups").
  int ps_replicas = 0;
  std::int64_t partition_bytes = std::int64_t{1} << 20;  // ps partitioned: split variables above this
  // ps: a step's pull is asked right behind its push, before the push is answered (false:
  // after it, as before; the same values either way).
  bool ps_overlap = true;
  // ps, async: a step's pull leaves BEFORE its push, so the server sends the values back
  // while the gradients come in: the link's two directions at once, one transfer of the
  // model per step instead of two. The values then lack this worker's own last push (one
  // step more of staleness, which asynchronous training already accepts). Off by default.
  bool ps_pull_ahead = false;
  double bucket_mb = 4.0;           // allreduce: gradient fusion size
  // allreduce: a ring step's block goes in pieces of this size, and this many pieces are
  // asked for ahead of need. Their product is what one ring keeps in flight: it must cover
  // the link's bandwidth x round trip, or the ring waits on latency (docs/collectives.md).
  int segment_kib = 256;
  int pipeline_depth = 4;
  Compression compression = Compression::none;  // allreduce: none | bf16 | fp16
  int stages = 2;                   // pipeline: processes the model's layers are cut into
  int micro_batches = 4;            // pipeline: micro-batches per step (divides training.batch)
  PipelineSchedule schedule = PipelineSchedule::one_f_one_b;  // pipeline: gpipe | 1f1b
  int replicas = 1;                 // pipeline: data-parallel copies of the whole pipeline
  double memory_mb = 0;             // pipeline: the planner's per-stage limit; 0: none
};

}  // namespace trib::config
