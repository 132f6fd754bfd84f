#include "app/fault_hooks.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>
#include <utility>

#include <nlohmann/json.hpp>

#include "ps/ps_wire.h"
#include "ps/replica_wire.h"
#include "trib/core/error.h"

namespace trib::app {
namespace {

#if TRIB_FAULT_HOOKS
constexpr const char* kAllreduceChiefLostAtFinalCheckpoint = "allreduce-chief-lost-at-final-checkpoint";
constexpr const char* kAllreduceChiefSlowAtFinalCheckpoint = "allreduce-chief-slow-at-final-checkpoint";
constexpr const char* kStreamSlowInRewind = "allreduce-stream-slow-in-rewind";
constexpr const char* kStreamSlowAfterLastStep = "allreduce-stream-slow-after-last-step";
// As kStreamSlowAfterLastStep, and a relaunched worker 0 asks to join only once the test has
// created kReleaseChiefJoin in the run directory (a second loss while the chief is away).
constexpr const char* kStreamEndChiefJoinHeld = "allreduce-stream-end-chief-join-held";
constexpr const char* kReleaseChiefJoin = "test-release-chief-join";
constexpr const char* kStreamSlowAfterRewind = "allreduce-stream-slow-after-rewind";
constexpr const char* kStreamHeldBeforeBroadcast = "allreduce-stream-held-before-broadcast";
constexpr const char* kStreamJoinAfterCheckpoint = "allreduce-stream-join-after-checkpoint";
constexpr const char* kStreamJoinAfterStep = "allreduce-stream-join-after-step";
constexpr const char* kStreamWorkerLostAtStep = "stream-worker-lost-at-step";
constexpr const char* kStreamWorkerLostAfterRewind = "stream-worker-lost-after-rewind";
constexpr const char* kStreamHeldInRollback = "allreduce-stream-held-in-rollback";
constexpr const char* kStreamWorkerLostBetweenPushes = "stream-worker-lost-between-pushes";
constexpr const char* kStreamWorkerLeavesAtStep = "stream-worker-leaves-at-step";
constexpr const char* kStreamWorkerLostBeforeHandBack = "stream-worker-lost-before-hand-back";

struct Fault {
  // "ps-lost-at-final-gather", "ps-copy-held" (with a server index),
  // kAllreduceChiefLostAtFinalCheckpoint (with how many of worker 0's processes in `index`) or
  // kAllreduceChiefSlowAtFinalCheckpoint, kStreamSlowInRewind, kStreamSlowAfterRewind or
  // kStreamSlowAfterLastStep or kStreamEndChiefJoinHeld (with seconds in `index`), kStreamHeldBeforeBroadcast (with a worker index) or
  // kStreamJoinAfterCheckpoint or kStreamJoinAfterStep (a step in `index`), kStreamWorkerLostAtStep (a worker in
  // `index`, a step in `step`), kStreamHeldInRollback (a worker in `index`, which of its
  // rollbacks in `step`); empty: none
  std::string kind;
  int index = -1;
  std::int64_t step = -1;
};

// Says so on stderr (the tests wait for the line), then holds the calling thread: a worker
// alive (its heartbeats go on) but not moving, for a test to act in that window.
void hold_worker(int index, int seconds, const char* where) {
  std::fprintf(stderr, "%s: worker %d is held %d s %s\n", kFaultVariable, index, seconds, where);
  std::fflush(nullptr);
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
}

// Says "<variable>: <what> (kill -9)" on stderr, flushed, and ends this process with SIGKILL:
// a process lost at a point the test chose, leaving what a crash leaves.
void lose_this_process(const std::string& what) {
  std::fprintf(stderr, "%s: %s (kill -9)\n", kFaultVariable, what.c_str());
  std::fflush(nullptr);
  ::kill(::getpid(), SIGKILL);
}

// The variable's fault, or none; bad text fails naming the variable.
Fault parse_fault() {
  const char* value = std::getenv(kFaultVariable);
  if (value == nullptr || *value == '\0') return {};
  const std::string text = value;
  if (text == kAllreduceChiefLostAtFinalCheckpoint) return {text, 1};
  Fault f;
  // WORKER:STEP, WORKER:N
  for (const auto& [kind, second] : {std::pair{kStreamWorkerLostAtStep, "STEP"}, std::pair{kStreamHeldInRollback, "N"},
                                     std::pair{kStreamWorkerLostBetweenPushes, "STEP"},
                                     std::pair{kStreamWorkerLeavesAtStep, "STEP"}}) {
    const std::string prefix = std::string(kind) + ":";
    if (!text.starts_with(prefix)) continue;
    const std::string rest = text.substr(prefix.size());
    const std::size_t colon = rest.find(':');
    try {
      if (colon != std::string::npos) f = {kind, std::stoi(rest.substr(0, colon)), std::stoll(rest.substr(colon + 1))};
    } catch (const std::exception&) {
    }
    TRIB_CHECK(f.index >= 0 && f.step > 0, InvalidArgument, "{}={}: expected {}:WORKER:{}", kFaultVariable, text, kind,
               second);
    return f;
  }
  for (const char* kind : {"ps-lost-at-final-gather", "ps-copy-held", kAllreduceChiefSlowAtFinalCheckpoint,
                           kAllreduceChiefLostAtFinalCheckpoint, kStreamSlowInRewind, kStreamSlowAfterRewind,
                           kStreamSlowAfterLastStep, kStreamHeldBeforeBroadcast, kStreamJoinAfterCheckpoint,
                           kStreamJoinAfterStep, kStreamWorkerLostAfterRewind, kStreamEndChiefJoinHeld,
                           kStreamWorkerLostBeforeHandBack}) {
    const std::string prefix = std::string(kind) + ":";
    try {
      if (text.starts_with(prefix)) f = {kind, std::stoi(text.substr(prefix.size()))};
    } catch (const std::exception&) {
    }
  }
  TRIB_CHECK(f.index >= 0, InvalidArgument,
             "{}={}: expected ps-lost-at-final-gather:INDEX, ps-copy-held:INDEX, {}[:PROCESSES], {}:SECONDS, "
             "{}:SECONDS, {}:SECONDS, {}:SECONDS, {}:SECONDS, {}:WORKER, {}:STEP, {}:STEP, {}:WORKER:N, "
             "{}:WORKER:STEP, {}:WORKER:STEP, {}:WORKER, {}:WORKER or {}:WORKER:STEP",
             kFaultVariable, text, kAllreduceChiefLostAtFinalCheckpoint, kAllreduceChiefSlowAtFinalCheckpoint,
             kStreamSlowInRewind, kStreamSlowAfterRewind, kStreamSlowAfterLastStep, kStreamEndChiefJoinHeld,
             kStreamHeldBeforeBroadcast,
             kStreamJoinAfterCheckpoint, kStreamJoinAfterStep, kStreamHeldInRollback, kStreamWorkerLostAtStep,
             kStreamWorkerLeavesAtStep, kStreamWorkerLostAfterRewind, kStreamWorkerLostBeforeHandBack,
             kStreamWorkerLostBetweenPushes);
  return f;
}
#endif

}  // namespace

void check_fault_variable() {
#if TRIB_FAULT_HOOKS
  (void)parse_fault();
#endif
}

std::function<void(const net::Message&)> ps_fault_hook(int index, bool relaunched, const ps::PsServer& server) {
#if TRIB_FAULT_HOOKS
  const Fault f = parse_fault();
  if (f.kind != "ps-lost-at-final-gather" || f.index != index || relaunched) return {};
  const ps::PsServer* s = &server;
  return [s, index](const net::Message& m) {
    if (m.method != ps::proto::kPsMethod) return;
    const ps::proto::Body body = ps::proto::decode(m.body);
    if (body.type() != ps::proto::Type::save) return;
    const nlohmann::json j = nlohmann::json::parse(body.text, nullptr, false);
    if (!j.is_object() || j.value("part", -1) != 1 || s->stats().workers_training != 0) return;
    lose_this_process(fmt::format("ps {} is lost at the final checkpoint's gather", index));
  };
#else
  (void)index;
  (void)relaunched;
  (void)server;
  return {};
#endif
}

std::function<void(const net::Message&)> backup_fault_hook(int index, bool relaunched, int shard) {
#if TRIB_FAULT_HOOKS
  const Fault f = parse_fault();
  if (f.kind != "ps-copy-held" || f.index != index || !relaunched) return {};
  auto held = std::make_shared<std::atomic<bool>>(false);
  return [index, shard, held](const net::Message& m) {
    if (m.method != ps::replica::kReplicaMethod) return;
    std::string_view body;
    if (ps::replica::decode_head(m.body, body).kind != ps::replica::Kind::snapshot) return;
    if (held->exchange(true)) return;  // only the first copy: a later one (a new primary's) is taken
    std::fprintf(stderr, "%s: ps %d holds back its copy of shard %d\n", kFaultVariable, index, shard);
    std::fflush(nullptr);
    // Long enough for the test to kill the shard's server meanwhile; then the copy is refused.
    std::this_thread::sleep_for(std::chrono::seconds(30));
    throw Unavailable(fmt::format("{}: ps {} held back its copy of shard {}", kFaultVariable, index, shard));
  };
#else
  (void)index;
  (void)relaunched;
  (void)shard;
  return {};
#endif
}

std::function<void()> allreduce_fault_hook(int index, int chief_relaunches) {
#if TRIB_FAULT_HOOKS
  const Fault f = parse_fault();
  if (index != 0) return {};
  if (f.kind == kAllreduceChiefSlowAtFinalCheckpoint && chief_relaunches == 0) {
    const int seconds = f.index;
    return [seconds] { hold_worker(0, seconds, "after the run's last exchange"); };
  }
  // The first `f.index` processes of worker 0: the first one, and as many relaunched ones.
  if (f.kind != kAllreduceChiefLostAtFinalCheckpoint || chief_relaunches >= f.index) return {};
  return [chief_relaunches] {
    lose_this_process(chief_relaunches == 0
                          ? std::string("worker 0 is lost after the run's last exchange")
                          : fmt::format("worker 0, relaunched {} time(s), is lost after the run's last exchange",
                                        chief_relaunches));
  };
#else
  (void)index;
  (void)chief_relaunches;
  return {};
#endif
}

std::function<void(const std::string&)> stream_fault_point(int index, const std::string& run_dir) {
#if TRIB_FAULT_HOOKS
  const Fault f = parse_fault();
  if (f.kind == kStreamWorkerLostBeforeHandBack) {
    if (f.index != index) return {};
    // Its relaunch hands the share back in its place: only the first process is lost, which
    // leaves this mark in the run directory.
    const std::filesystem::path mark = std::filesystem::path(run_dir) / fmt::format("fault-lost-before-hand-back-{}", index);
    if (std::filesystem::exists(mark)) return {};
    return [index, mark](const std::string& point) {
      if (point != kStreamBeforeHandBack) return;
      std::ofstream(mark) << "lost\n";
      lose_this_process(fmt::format("worker {} is lost before it hands a returning worker's share back", index));
    };
  }
  if (f.kind == kStreamWorkerLostAtStep) {
    if (f.index != index) return {};
    // Its step's update applied by the servers and its id line written: a clean point, so
    // that the test's id record and the servers' cursor for the worker agree.
    return [index, at = fmt::format("{}:{}", kStreamStepApplied, f.step), step = f.step](const std::string& point) {
      if (point == at) lose_this_process(fmt::format("worker {} is lost after its step {}", index, step));
    };
  }
  if (f.kind == kStreamWorkerLeavesAtStep) {
    if (f.index != index) return {};
    // SIGTERM to itself once its step is applied: it leaves at that step boundary (a
    // non-chief parameter-server worker's leave), as `trib scale` down would make it.
    return [index, at = fmt::format("{}:{}", kStreamStepApplied, f.step), step = f.step](const std::string& point) {
      if (point != at) return;
      std::fprintf(stderr, "%s: SIGTERM to worker %d after its step %lld\n", kFaultVariable, index,
                   static_cast<long long>(step));
      std::fflush(nullptr);
      ::kill(::getpid(), SIGTERM);
    };
  }
  if (f.kind == kStreamWorkerLostAfterRewind) {
    if (f.index != index) return {};
    return [index](const std::string& point) {
      if (point == kStreamRewound) lose_this_process(fmt::format("worker {} is lost right after its in-place rewind", index));
    };
  }
  if (f.kind == kStreamHeldBeforeBroadcast) {
    if (f.index != index) return {};
    // Only this worker: the other members go on into the broadcast and wait there for it.
    auto done = std::make_shared<std::atomic<bool>>(false);
    return [done, index](const std::string& point) {
      if (point != "allreduce-stream-before-broadcast" || done->exchange(true)) return;
      hold_worker(index, 30, "in its allreduce group's rollback, before the broadcast of the checkpoint's state");
    };
  }
  if (f.kind == kStreamHeldInRollback) {
    if (f.index != index) return {};
    // Counted per process: a relaunched worker W starts counting again (and, joining once,
    // never reaches a second rollback in the tests).
    auto seen = std::make_shared<std::atomic<std::int64_t>>(0);
    return [seen, index, nth = f.step](const std::string& point) {
      if (point != "allreduce-stream-rollback" || ++*seen != nth) return;
      hold_worker(index, 30, fmt::format("in its allreduce group's rollback {} (before its rewind)", nth).c_str());
    };
  }
  if (f.kind != kStreamSlowInRewind && f.kind != kStreamSlowAfterRewind && f.kind != kStreamSlowAfterLastStep &&
      f.kind != kStreamEndChiefJoinHeld)
    return {};
  const std::string at = f.kind == kStreamSlowInRewind     ? "allreduce-stream-rollback"
                         : f.kind == kStreamSlowAfterRewind ? "allreduce-stream-rewound"
                                                            : "stream-after-last-step";
  const std::string where = f.kind == kStreamSlowInRewind ? "inside its allreduce group's rollback (before its rewind)"
                            : f.kind == kStreamSlowAfterRewind
                                ? "after its allreduce group's rollback (rewound, before its next step)"
                                : "after the run's last step (before its final Kafka offsets)";
  auto done = std::make_shared<std::atomic<bool>>(false);
  return [at, where, done, index, seconds = f.index](const std::string& point) {
    if (point != at || done->exchange(true)) return;  // once per process: a later rollback goes on
    hold_worker(index, seconds, where.c_str());
  };
#else
  (void)index;
  (void)run_dir;
  return {};
#endif
}

std::function<void(const char*, int, std::int64_t)> ps_push_fault_hook(int index, const std::string& run_dir) {
#if TRIB_FAULT_HOOKS
  const Fault f = parse_fault();
  if (f.kind != kStreamWorkerLostBetweenPushes || f.index != index) return {};
  // Its relaunch pushes step S again (async resumes at the oldest server's clock): only the
  // first process is lost, which leaves this mark in the run directory.
  const std::filesystem::path mark = std::filesystem::path(run_dir) / fmt::format("fault-lost-between-pushes-{}", index);
  if (std::filesystem::exists(mark)) return {};
  return [index, mark, step = f.step](const char* what, int ps, std::int64_t at) {
    if (at != step) return;
    const std::string event = what;
    // Server 0's push is sent and answered; the others' never leave: this thread waits for
    // the kill, on its own fan-out thread.
    if (ps > 0 && event == "push leaving") std::this_thread::sleep_for(std::chrono::seconds(60));
    if (ps != 0 || event != "push answered") return;
    std::ofstream(mark) << "lost\n";
    lose_this_process(
        fmt::format("worker {} is lost after its push of step {} reached ps 0 and not the others", index, step));
  };
#else
  (void)index;
  (void)run_dir;
  return {};
#endif
}

std::function<void()> stream_join_fault_hook(int index, const std::string& run_dir) {
#if TRIB_FAULT_HOOKS
  const Fault f = parse_fault();
  if (f.kind == kStreamEndChiefJoinHeld && index == 0)
    return [marker = std::filesystem::path(run_dir) / kReleaseChiefJoin] {
      std::fprintf(stderr, "%s: worker 0 waits to join until %s exists\n", kFaultVariable, marker.string().c_str());
      std::fflush(nullptr);
      // Bounded: the test may fail first.
      for (const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
           std::chrono::steady_clock::now() < until && !std::filesystem::exists(marker);)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    };
  if (f.kind == kStreamJoinAfterStep)
    return [index, step = f.index, record = std::filesystem::path(run_dir) / "stream_ids" /
                                            fmt::format("worker-{}.txt", index == 0 ? 1 : 0)] {
      std::fprintf(stderr, "%s: worker %d waits to join until %s has step %d\n", kFaultVariable, index,
                   record.string().c_str(), step);
      std::fflush(nullptr);
      const std::string prefix = std::to_string(step) + " ";
      // Bounded: the run may end first (the join then fails as a late one does).
      for (const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
           std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(std::chrono::milliseconds(20))) {
        std::ifstream in(record);
        for (std::string line; std::getline(in, line);)
          if (line.starts_with(prefix)) return;
      }
    };
  if (f.kind != kStreamJoinAfterCheckpoint) return {};
  return [index, step = f.index, checkpoints = std::filesystem::path(run_dir) / "checkpoints"] {
    std::fprintf(stderr, "%s: worker %d waits to join until checkpoint %d is written\n", kFaultVariable, index, step);
    std::fflush(nullptr);
    // Bounded: the run may end first (the join then fails as a late one does).
    for (const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
         std::chrono::steady_clock::now() < until; std::this_thread::sleep_for(std::chrono::milliseconds(20))) {
      std::error_code ec;
      for (const auto& e : std::filesystem::directory_iterator(checkpoints, ec)) {
        const std::string name = e.path().filename().string();
        if (name.starts_with("ckpt-") && name.find_first_not_of("0123456789", 5) == std::string::npos &&
            name.size() > 5 && std::stoll(name.substr(5)) >= step)
          return;
      }
    }
  };
#else
  (void)index;
  (void)run_dir;
  return {};
#endif
}

}  // namespace trib::app
