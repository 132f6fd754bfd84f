#include "trib/config/strategy_config.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "config/config_reader.h"
#include "config/section_readers.h"
#include "trib/core/error.h"

namespace trib::config {
namespace {

// One table per enum: the names a job file may use, in enum order.
constexpr std::string_view kStrategyNames[] = {"local", "ps", "allreduce", "pipeline"};
constexpr std::string_view kPsModes[] = {"sync", "async", "bounded", "averaging"};
constexpr std::string_view kPlacements[] = {"round_robin", "greedy", "partitioned", "balanced"};
constexpr std::string_view kCompressions[] = {"none", "bf16", "fp16"};
constexpr std::string_view kSchedules[] = {"gpipe", "1f1b"};

template <typename E, std::size_t N>
E parse_enum(ConfigReader& r, const std::string& key, E fallback, const std::string_view (&names)[N]) {
  if (!r.has(key)) return fallback;
  const std::string text = r.get<std::string>(key, "");
  for (std::size_t i = 0; i < N; ++i)
    if (text == names[i]) return static_cast<E>(i);
  throw InvalidArgument(fmt::format("config {}: {} '{}' is not supported: expected {}", r.file(), r.where(key), text,
                                    fmt::join(names, ", ")));
}

}  // namespace

std::string_view to_string(StrategyName v) { return kStrategyNames[static_cast<int>(v)]; }
std::string_view to_string(PsMode v) { return kPsModes[static_cast<int>(v)]; }
std::string_view to_string(PsPlacement v) { return kPlacements[static_cast<int>(v)]; }
std::string_view to_string(Compression v) { return kCompressions[static_cast<int>(v)]; }
std::string_view to_string(PipelineSchedule v) { return kSchedules[static_cast<int>(v)]; }

StrategyConfig read_strategy(ConfigReader r) {
  StrategyConfig s;
  s.name = parse_enum(r, "name", s.name, kStrategyNames);
  s.mode = parse_enum(r, "mode", s.mode, kPsModes);
  s.placement = parse_enum(r, "placement", s.placement, kPlacements);
  s.staleness = r.get<int>("staleness", s.staleness);
  s.backup_workers = r.get<int>("backup_workers", s.backup_workers);
  s.period = r.get<int>("period", s.period);
  s.ps_replicas = r.get<int>("ps_replicas", s.ps_replicas);
  s.partition_bytes = r.get<std::int64_t>("partition_bytes", s.partition_bytes);
  s.ps_overlap = r.get<bool>("ps_overlap", s.ps_overlap);
  s.ps_pull_ahead = r.get<bool>("ps_pull_ahead", s.ps_pull_ahead);
  s.bucket_mb = r.get<double>("bucket_mb", s.bucket_mb);
  s.segment_kib = r.get<int>("segment_kib", s.segment_kib);
  s.pipeline_depth = r.get<int>("pipeline_depth", s.pipeline_depth);
  s.compression = parse_enum(r, "compression", s.compression, kCompressions);
  s.stages = r.get<int>("stages", s.stages);
  s.micro_batches = r.get<int>("micro_batches", s.micro_batches);
  s.schedule = parse_enum(r, "schedule", s.schedule, kSchedules);
  s.replicas = r.get<int>("replicas", s.replicas);
  s.memory_mb = r.get<double>("memory_mb", s.memory_mb);
  r.finish();
  TRIB_CHECK(s.stages >= 1 && s.stages <= 64 && s.micro_batches >= 1 && s.replicas >= 1 && s.memory_mb >= 0,
             InvalidArgument,
             "config {}: strategy.stages must be 1..64, micro_batches and replicas at least 1 and memory_mb >= 0 "
             "(got {}, {}, {}, {})",
             r.file(), s.stages, s.micro_batches, s.replicas, s.memory_mb);
  TRIB_CHECK(s.staleness > 0, InvalidArgument, "config {}: strategy.staleness must be at least 1, got {}",
             r.file(), s.staleness);
  TRIB_CHECK(s.period > 0 && s.backup_workers >= 0 && s.partition_bytes > 0 && s.bucket_mb > 0, InvalidArgument,
             "config {}: strategy.period, partition_bytes and bucket_mb must be positive and backup_workers >= 0",
             r.file());
  TRIB_CHECK(s.segment_kib >= 4 && s.segment_kib <= 65536 && s.pipeline_depth >= 1 && s.pipeline_depth <= 256,
             InvalidArgument,
             "config {}: strategy.segment_kib must be 4..65536 and pipeline_depth 1..256 (got {}, {})", r.file(),
             s.segment_kib, s.pipeline_depth);
  TRIB_CHECK(s.ps_replicas == 0 || s.ps_replicas == 1, InvalidArgument,
             "config {}: strategy.ps_replicas must be 0 or 1 (one hot backup per shard), got {}", r.file(),
             s.ps_replicas);
  TRIB_CHECK(!s.ps_pull_ahead || s.mode == PsMode::async, InvalidArgument,
             "config {}: strategy.ps_pull_ahead needs strategy.mode: async (a pull ahead of its push lacks that "
             "push, which sync, bounded and averaging rounds count on)",
             r.file());
  return s;
}

}  // namespace trib::config
