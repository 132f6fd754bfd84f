// Parameter-server training with every role as a thread of this process, over the
// in-process transport: synchronous training equals single-process training at the global
// batch, and bounded staleness holds its bound.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <thread>

#include "trib/config/job_config.h"
#include "trib/net/inproc_transport.h"
#include "trib/net/net_context.h"
#include "trib/ps/ps_server.h"
#include "trib/ps/strategy_ps.h"
#include "trib/train/trainer.h"

namespace trib::ps {
namespace {

namespace fs = std::filesystem;

config::JobConfig job(std::int64_t batch, std::int64_t steps, std::vector<std::string> extra = {}) {
  std::vector<std::string> o = {"data.train_subset=1024", "data.test_subset=200", "training.steps=" + std::to_string(steps),
                                "training.batch=" + std::to_string(batch), "training.train_metrics=false",
                                "threads.intra=1", "optimizer.name=sgd", "optimizer.lr=0.1", "schedule.name=constant",
                                "data.prefetch=0"};
  o.insert(o.end(), extra.begin(), extra.end());
  return config::load_job_config(std::string(TRIB_SOURCE_DIR) + "/examples/fashion_mlp.yaml", o);
}

std::vector<VariableInfo> variables() {
  return {{"dense_1/w", Shape{784, 256}}, {"dense_1/b", Shape{256}}, {"dense_2/w", Shape{256, 128}},
          {"dense_2/b", Shape{128}},      {"dense_3/w", Shape{128, 10}}, {"dense_3/b", Shape{10}}};
}

// Servers and workers in one process.
struct ThreadCluster {
  std::shared_ptr<net::InProcHub> hub = std::make_shared<net::InProcHub>();
  net::ClusterSecret secret = net::ClusterSecret::generate();
  std::vector<std::unique_ptr<PsServer>> servers;
  std::vector<std::unique_ptr<net::Listener>> listeners;
  std::vector<std::shared_ptr<net::Transport>> transports;

  std::shared_ptr<net::Transport> transport(const std::string& role, int index) {
    auto t = std::make_shared<net::InProcTransport>(net::NetContext::create(secret, {role, index, ""}), hub);
    transports.push_back(t);
    return t;
  }

  ThreadCluster(int num_ps, int workers, Mode mode, int staleness, const std::string& placement) {
    Placement p = place(variables(), num_ps, parse_placement(placement), 64 << 10);
    for (int i = 0; i < num_ps; ++i) {
      servers.push_back(std::make_unique<PsServer>(PsServerOptions{
          i, workers, mode, staleness, 0, variables(), p, make_optimizer({.name = "sgd"})}));
      PsServer* s = servers.back().get();
      listeners.push_back(transport("ps", i)->listen(
          "ps" + std::to_string(i) + ":1", {[s](net::Message m, const net::PeerIdentity& f) { return s->handle(std::move(m), f); }}));
    }
    placement_ = p;
  }

  // `tweak`: changes to the worker's strategy options (ps_overlap, a trace).
  train::TrainerOptions worker(const config::JobConfig& j, int index, int workers, Mode mode, const fs::path& out,
                               std::FILE* log, std::function<void(PsUpdateOptions&)> tweak = {}) {
    train::TrainerOptions o{j, out, false, false, log, {}, {}};
    o.distribution.worker_index = index;
    o.distribution.workers = workers;
    auto t = transport("worker", index);
    std::vector<std::shared_ptr<net::Connection>> conns;
    for (std::size_t p = 0; p < servers.size(); ++p) conns.push_back(t->connect("ps" + std::to_string(p) + ":1"));
    Placement placement = placement_;
    o.distribution.make_update = [=](const train::UpdateInputs& in) {
      PsUpdateOptions po;
      po.worker_index = index;
      po.workers = workers;
      po.mode = mode;
      po.clip_norm = j.training.clip_norm;
      po.variables = variables();
      po.placement = placement;
      po.servers = conns;
      po.optimizer = in.optimizer;
      po.schedule = in.schedule;
      if (tweak) tweak(po);
      return std::make_unique<PsUpdate>(po);
    };
    return o;
  }
  Placement placement_;
};

fs::path temp(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("trib_ps_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

TEST(PsThreads, SyncWithNWorkersEqualsOneProcessAtNTimesTheBatch) {
  const int n = 2, b = 32, steps = 12;
  std::FILE* quiet = std::fopen("/dev/null", "w");
  fs::path base = temp("sync");

  std::map<std::int64_t, double> single;
  train::TrainerOptions one{job(n * b, steps), base / "single", false, false, quiet, {}, {}};
  one.on_step = [&](std::int64_t s, double loss) { single[s] = loss; };
  train::train(one);

  ThreadCluster cluster(2, n, Mode::sync, 1, "partitioned");
  std::mutex mu;
  std::map<std::int64_t, double> summed;
  std::vector<std::thread> workers;
  for (int w = 0; w < n; ++w) {
    train::TrainerOptions o = cluster.worker(job(b, steps), w, n, Mode::sync, base / "cluster", quiet);
    o.on_step = [&](std::int64_t s, double loss) {
      std::lock_guard lock(mu);
      summed[s] += loss / n;
    };
    workers.emplace_back([o] { train::train(o); });
  }
  for (auto& t : workers) t.join();
  ASSERT_EQ(summed.size(), single.size());
  for (auto& [s, loss] : single) EXPECT_NEAR(summed[s], loss, 1e-4 * (1 + loss)) << "step " << s;
  std::fclose(quiet);
  fs::remove_all(base);
}

TEST(PsThreads, BoundedStalenessNeverExceedsTheBound) {
  const int n = 3, staleness = 2, steps = 30;
  std::FILE* quiet = std::fopen("/dev/null", "w");
  fs::path base = temp("bounded");
  ThreadCluster cluster(1, n, Mode::bounded, staleness, "greedy");
  std::vector<std::thread> workers;
  for (int w = 0; w < n; ++w) {
    train::TrainerOptions o = cluster.worker(job(32, steps), w, n, Mode::bounded, base, quiet);
    if (w == 2)  // a straggler: the others must wait for it
      o.on_step = [](std::int64_t, double) { std::this_thread::sleep_for(std::chrono::milliseconds(20)); };
    workers.emplace_back([o] { train::train(o); });
  }
  for (auto& t : workers) t.join();
  PsStats s = cluster.servers[0]->stats();
  EXPECT_LE(s.max_clock_gap, staleness);
  EXPECT_GT(s.max_clock_gap, 0) << "the fast workers did run ahead";
  EXPECT_EQ(s.applied, static_cast<std::uint64_t>(n * steps));
  std::fclose(quiet);
  fs::remove_all(base);
}

// training.clip_norm under the ps strategy: the worker clips the whole gradient (its global
// norm over every variable, whichever server holds it) before pushing, so the first update
// is the one local training makes.
TEST(PsThreads, ClipNormGivesTheFirstUpdateThatLocalTrainingGives) {
  const int b = 32, steps = 2;
  const std::vector<std::string> clip = {"training.clip_norm=0.05", "optimizer.lr=0.5", "schedule.warmup_steps=0"};
  std::FILE* quiet = std::fopen("/dev/null", "w");
  fs::path base = temp("clip");
  auto losses = [&](train::TrainerOptions o) {
    std::map<std::int64_t, double> out;
    o.on_step = [&](std::int64_t s, double loss) { out[s] = loss; };
    train::train(o);
    return out;
  };
  auto local = losses(train::TrainerOptions{job(b, steps, clip), base / "local", false, false, quiet, {}, {}});
  auto unclipped = losses(train::TrainerOptions{job(b, steps, {"optimizer.lr=0.5", "schedule.warmup_steps=0"}), base / "unclipped", false, false, quiet, {}, {}});
  // Two servers, so that the norm must span variables held on different servers.
  ThreadCluster cluster(2, 1, Mode::async, 1, "partitioned");
  auto ps = losses(cluster.worker(job(b, steps, clip), 0, 1, Mode::async, base / "ps", quiet));
  ASSERT_EQ(local.size(), 2u);
  ASSERT_EQ(ps.size(), 2u);
  // Steps count from 1; the second step's loss is measured after the first update.
  EXPECT_NEAR(ps[2], local[2], 1e-5 * (1 + local[2]));
  EXPECT_GT(std::abs(unclipped[2] - local[2]), 1e-3) << "the clip changed the first update";
  std::fclose(quiet);
  fs::remove_all(base);
}

// strategy.ps_overlap: a step's pull leaves right behind its push. The server takes a
// connection's requests in order, so the pull still sees the push applied: the same values,
// bit for bit, as the push-then-pull path, in every mode.
struct OverlapRun {
  std::map<int, std::map<std::int64_t, double>> losses;  // per worker, per step
  std::vector<PsStats> stats;                            // per server
  // Per worker and server: the order of "push sent", "pull sent", "push answered", ...
  std::map<std::pair<int, int>, std::vector<std::string>> events;
};

OverlapRun run_overlap(bool overlap, int num_ps, int n, Mode mode, const std::string& name, bool ahead = false) {
  const int b = 32, steps = 8;
  std::FILE* quiet = std::fopen("/dev/null", "w");
  fs::path base = temp(name + (overlap ? "_on" : "_off"));
  ThreadCluster cluster(num_ps, n, mode, 1, "partitioned");
  OverlapRun out;
  std::mutex mu;
  std::vector<std::thread> workers;
  for (int w = 0; w < n; ++w) {
    auto tweak = [&, w](PsUpdateOptions& po) {
      po.overlap = overlap;
      po.pull_ahead = ahead;
      po.on_exchange = [&, w](const char* what, int ps, std::int64_t step) {
        std::lock_guard lock(mu);
        out.events[{w, ps}].push_back(fmt::format("{} {}", what, step));
      };
    };
    train::TrainerOptions o = cluster.worker(job(b, steps), w, n, mode, base / "cluster", quiet, tweak);
    o.on_step = [&, w](std::int64_t s, double loss) {
      std::lock_guard lock(mu);
      out.losses[w][s] = loss;
    };
    workers.emplace_back([o] { train::train(o); });
  }
  for (auto& t : workers) t.join();
  for (const auto& s : cluster.servers) out.stats.push_back(s->stats());
  std::fclose(quiet);
  fs::remove_all(base);
  return out;
}

// Where `first` happened before `second` in `events` (both present).
bool before(const std::vector<std::string>& events, const std::string& first, const std::string& second) {
  auto a = std::find(events.begin(), events.end(), first), b = std::find(events.begin(), events.end(), second);
  return a != events.end() && b != events.end() && a < b;
}

TEST(PsOverlap, SyncRunEqualsThePushThenPullPathBitForBit) {
  const OverlapRun off = run_overlap(false, 2, 2, Mode::sync, "overlap_sync");
  const OverlapRun on = run_overlap(true, 2, 2, Mode::sync, "overlap_sync");
  ASSERT_EQ(off.losses.size(), 2u);
  for (const auto& [w, losses] : off.losses) {
    ASSERT_EQ(on.losses.at(w).size(), losses.size()) << "worker " << w;
    for (const auto& [s, loss] : losses) EXPECT_EQ(on.losses.at(w).at(s), loss) << "worker " << w << " step " << s;
  }
  for (std::size_t p = 0; p < off.stats.size(); ++p) {
    EXPECT_EQ(on.stats[p].applied, off.stats[p].applied) << "ps " << p;
    EXPECT_EQ(on.stats[p].dropped_late, off.stats[p].dropped_late) << "ps " << p;
  }
}

// One asynchronous worker: its pull must see its own push applied, so every push is made
// from the server's newest version (staleness 0), with overlap as without.
TEST(PsOverlap, AsyncValuesAndStalenessAreUnchanged) {
  const OverlapRun off = run_overlap(false, 1, 1, Mode::async, "overlap_async");
  const OverlapRun on = run_overlap(true, 1, 1, Mode::async, "overlap_async");
  ASSERT_FALSE(off.losses.at(0).empty());
  EXPECT_EQ(on.losses.at(0), off.losses.at(0));
  EXPECT_EQ(on.stats[0].staleness, off.stats[0].staleness);
  EXPECT_EQ(on.stats[0].staleness[0], on.stats[0].applied) << "every push made from the newest values";
}

// The order of requests, from the worker's trace, not from timing: with overlap the pull for
// step t + 1 is on the connection before the push of step t is answered; without, after.
TEST(PsOverlap, ThePullLeavesBeforeThePushIsAnswered) {
  for (Mode mode : {Mode::sync, Mode::async}) {
    const OverlapRun on = run_overlap(true, 2, 2, mode, "overlap_order");
    const OverlapRun off = run_overlap(false, 2, 2, mode, "overlap_order");
    ASSERT_EQ(on.events.size(), 4u) << "2 workers x 2 servers";
    for (const auto& [who, events] : on.events) {
      int steps = 0;
      for (std::int64_t t = 0; t < 8; ++t) {
        const std::string push = fmt::format("push answered {}", t), pull = fmt::format("pull sent {}", t + 1);
        if (std::find(events.begin(), events.end(), push) == events.end()) continue;
        ++steps;
        EXPECT_TRUE(before(events, pull, push)) << "worker " << who.first << " ps " << who.second << " step " << t;
        EXPECT_TRUE(before(off.events.at(who), push, pull)) << "without overlap: worker " << who.first << " step " << t;
      }
      EXPECT_GE(steps, 7) << "worker " << who.first << " ps " << who.second;
    }
  }
}

// strategy.ps_pull_ahead (async): the pull for step t + 1 is on the connection before the push
// of step t, so the server answers it with the values before that push: the link carries the
// values back while the gradients come in. One worker alone then pushes every step but its
// first from values one push old (staleness 1), where the pull behind the push gives 0.
TEST(PsPullAhead, ThePullLeavesBeforeThePushAndItsValuesLackThatPush) {
  const OverlapRun ahead = run_overlap(true, 1, 1, Mode::async, "pull_ahead", true);
  const std::vector<std::string>& events = ahead.events.at({0, 0});
  int steps = 0;
  for (std::int64_t t = 0; t < 8; ++t) {
    const std::string push = fmt::format("push sent {}", t), pull = fmt::format("pull sent {}", t + 1);
    if (std::find(events.begin(), events.end(), push) == events.end()) continue;
    ++steps;
    EXPECT_TRUE(before(events, pull, push)) << "step " << t;
  }
  EXPECT_GE(steps, 7);
  const PsStats& st = ahead.stats[0];
  ASSERT_GE(st.applied, 7u);
  ASSERT_GE(st.staleness.size(), 2u);
  EXPECT_EQ(st.staleness[0], 1u) << "only the first push is made from the newest values";
  EXPECT_EQ(st.staleness[1], st.applied - 1) << "every later one from the values before its predecessor";
  // It still trains: the last step's loss is below the first's.
  const auto& losses = ahead.losses.at(0);
  ASSERT_GE(losses.size(), 2u);
  EXPECT_LT(losses.rbegin()->second, losses.begin()->second);
}

}  // namespace
}  // namespace trib::ps
