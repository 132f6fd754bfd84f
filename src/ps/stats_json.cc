#include "ps/stats_json.h"

#include <nlohmann/json.hpp>

#include "trib/core/error.h"

namespace trib::ps {

using json = nlohmann::json;

std::string stats_to_json(const PsStats& s) {
  namespace k = stats_key;
  return json{{k::kBytesIn, s.bytes_in},     {k::kBytesOut, s.bytes_out},       {k::kRequests, s.requests},
              {k::kApplied, s.applied},      {k::kDroppedLate, s.dropped_late}, {k::kRefused, s.refused},
              {k::kStaleGeneration, s.stale_generation},
              {k::kMaxClockGap, s.max_clock_gap}, {k::kStaleness, s.staleness},
              {k::kDroppedNonFinite, s.dropped_nonfinite}, {k::kSkippedRounds, s.skipped_rounds},
              {k::kWorkersLost, s.workers_lost}, {k::kWorkersReadmitted, s.workers_readmitted},
              {k::kWorkersJoined, s.workers_joined},
              {k::kDataApplied, s.data_applied}, {k::kDataTotal, s.data_total}, {k::kDataReturned, s.data_returned},
              {k::kWorkersTraining, s.workers_training}, {k::kWorkersAway, s.workers_away},
              {k::kRollbacks, s.rollbacks}, {k::kRolledBackRequests, s.rolled_back_requests},
              {k::kForwarded, s.forwarded}, {k::kDuplicatePushes, s.duplicate_pushes}, {k::kTakeovers, s.takeovers},
              {k::kReplayedPushes, s.replayed_pushes}, {k::kLateReplays, s.late_replays}}
      .dump();
}

PsStats stats_from_json(const std::string& text, const std::string& source) {
  namespace k = stats_key;
  PsStats s;
  try {
    json j = json::parse(text);
    s.bytes_in = j.at(k::kBytesIn).get<std::uint64_t>();
    s.bytes_out = j.at(k::kBytesOut).get<std::uint64_t>();
    s.requests = j.at(k::kRequests).get<std::uint64_t>();
    s.applied = j.at(k::kApplied).get<std::uint64_t>();
    s.dropped_late = j.at(k::kDroppedLate).get<std::uint64_t>();
    s.refused = j.at(k::kRefused).get<std::uint64_t>();
    s.stale_generation = j.at(k::kStaleGeneration).get<std::uint64_t>();
    s.max_clock_gap = j.at(k::kMaxClockGap).get<std::int64_t>();
    s.staleness = j.at(k::kStaleness).get<decltype(s.staleness)>();
    s.dropped_nonfinite = j.at(k::kDroppedNonFinite).get<std::uint64_t>();
    s.skipped_rounds = j.at(k::kSkippedRounds).get<std::uint64_t>();
    s.workers_lost = j.at(k::kWorkersLost).get<std::uint64_t>();
    s.workers_readmitted = j.at(k::kWorkersReadmitted).get<std::uint64_t>();
    s.workers_joined = j.value(k::kWorkersJoined, std::uint64_t{0});
    s.data_applied = j.value(k::kDataApplied, std::int64_t{0});
    s.data_total = j.value(k::kDataTotal, std::int64_t{0});
    s.data_returned = j.value(k::kDataReturned, std::int64_t{0});
    s.workers_training = j.at(k::kWorkersTraining).get<std::uint64_t>();
    s.workers_away = j.at(k::kWorkersAway).get<std::uint64_t>();
    s.rollbacks = j.at(k::kRollbacks).get<std::uint64_t>();
    s.rolled_back_requests = j.at(k::kRolledBackRequests).get<std::uint64_t>();
    s.forwarded = j.value(k::kForwarded, std::uint64_t{0});
    s.duplicate_pushes = j.value(k::kDuplicatePushes, std::uint64_t{0});
    s.takeovers = j.value(k::kTakeovers, std::uint64_t{0});
    s.replayed_pushes = j.value(k::kReplayedPushes, std::uint64_t{0});
    s.late_replays = j.value(k::kLateReplays, std::uint64_t{0});
  } catch (const json::exception& e) {
    throw InvalidArgument(fmt::format("{}: malformed stats reply: {}", source, e.what()));
  }
  return s;
}

}  // namespace trib::ps
