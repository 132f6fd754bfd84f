// The rollback protocol of a parameter server's automatic restore (trib/ps/ps_recovery.h),
// with the servers and the workers as threads of this process over the in-process transport.
// A server is "killed" by closing its listener (and with it every connection to it) and put
// back empty at a new address, as a launcher's relaunch would: the chief restores every server
// from its newest checkpoint (or the initial values when there is none yet), every worker
// rewinds to it, the steps since are taken again, and the run ends with all its steps.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
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

config::JobConfig job(std::int64_t steps, std::int64_t checkpoint_every) {
  return config::load_job_config(
      std::string(TRIB_SOURCE_DIR) + "/examples/fashion_mlp.yaml",
      {"data.train_subset=2048", "data.test_subset=200", "training.steps=" + std::to_string(steps),
       "training.batch=32", "training.train_metrics=false", "threads.intra=1", "optimizer.name=adam",
       "optimizer.lr=0.001", "schedule.name=constant", "data.prefetch=0",
       "training.checkpoint_every=" + std::to_string(checkpoint_every), "training.eval_every=1000"});
}

std::vector<VariableInfo> variables() {
  return {{"dense_1/w", Shape{784, 256}}, {"dense_1/b", Shape{256}}, {"dense_2/w", Shape{256, 128}},
          {"dense_2/b", Shape{128}},      {"dense_3/w", Shape{128, 10}}, {"dense_3/b", Shape{10}}};
}

// Two async servers, a rendezvous store and a membership generation, all in this process.
class RestoreCluster {
 public:
  static constexpr int kServers = 2;

  explicit RestoreCluster(int workers, Mode mode = Mode::async) : workers_(workers), mode_(mode) {
    placement_ = place(variables(), kServers, parse_placement("round_robin"), 64 << 10);
    for (int i = 0; i < kServers; ++i) start_server(i);
  }

  // As a kill -9 and a relaunch: every connection to server `i` closes, and an empty server
  // takes its place at a new address, published in the store; the membership moves on.
  void kill_and_relaunch(int i) {
    std::lock_guard lock(mu_);
    listeners_[i].reset();
    ++generation_;
    start_server_locked(i);
  }

  PsServer& server(int i) {
    std::lock_guard lock(mu_);
    return *servers_[i];
  }

  train::TrainerOptions worker(const config::JobConfig& j, int index, const fs::path& out, std::FILE* log) {
    train::TrainerOptions o{j, out, false, false, log, {}, {}};
    o.distribution.worker_index = index;
    o.distribution.workers = workers_;
    std::vector<std::shared_ptr<net::Connection>> conns;
    auto t = transport("worker", index);
    for (int p = 0; p < kServers; ++p) conns.push_back(t->connect(*lookup(address_key(p))));
    PsRecoveryOptions r;
    r.reconnect = [this, t](int p, std::chrono::milliseconds) { return t->connect(*lookup(address_key(p))); };
    r.publish = [this](const std::string& k, const std::string& v) {
      std::lock_guard lock(mu_);
      store_[k] = v;
    };
    r.lookup = [this](const std::string& k) { return lookup(k); };
    r.generation = [this] {
      std::lock_guard lock(mu_);
      return generation_;
    };
    if (index == 0) r.checkpoints = (out / "checkpoints").string();
    r.timeout = std::chrono::seconds(60);
    const int workers = workers_;
    const Mode mode = mode_;
    const Placement placement = placement_;
    o.distribution.make_update = [=](const train::UpdateInputs& in) {
      PsUpdateOptions po;
      po.worker_index = index;
      po.workers = workers;
      po.mode = mode;
      po.variables = variables();
      po.placement = placement;
      po.servers = conns;
      po.optimizer = in.optimizer;
      po.schedule = in.schedule;
      po.recovery = r;
      return std::make_unique<PsUpdate>(po);
    };
    return o;
  }

  std::optional<std::string> lookup(const std::string& key) {
    std::lock_guard lock(mu_);
    auto it = store_.find(key);
    if (it == store_.end()) return std::nullopt;
    return it->second;
  }

 private:
  static std::string address_key(int p) { return "ps/" + std::to_string(p) + "/address"; }

  std::shared_ptr<net::Transport> transport(const std::string& role, int index) {
    auto t = std::make_shared<net::InProcTransport>(net::NetContext::create(secret_, {role, index, ""}), hub_);
    transports_.push_back(t);
    return t;
  }

  void start_server(int i) {
    std::lock_guard lock(mu_);
    start_server_locked(i);
  }

  void start_server_locked(int i) {
    // The replaced server is kept: a handler of the closed listener may still be returning.
    auto s = std::make_shared<PsServer>(
        PsServerOptions{i, workers_, mode_, 2, 0, variables(), placement_, make_optimizer({.name = "adam"})});
    servers_.resize(kServers);
    listeners_.resize(kServers);
    if (servers_[i]) retired_.push_back(servers_[i]);
    servers_[i] = s;
    const std::string address = "ps" + std::to_string(i) + "-" + std::to_string(++launches_) + ":1";
    net::Handlers h;
    h.on_request = [s](net::Message m, const net::PeerIdentity& f) { return s->handle(std::move(m), f); };
    h.on_close = [s](const net::PeerIdentity& peer, std::string_view) { s->connection_closed(peer); };
    listeners_[i] = transport("ps", i)->listen(address, std::move(h));
    store_[address_key(i)] = address;
  }

  int workers_;
  Mode mode_;
  Placement placement_;
  std::shared_ptr<net::InProcHub> hub_ = std::make_shared<net::InProcHub>();
  net::ClusterSecret secret_ = net::ClusterSecret::generate();
  std::mutex mu_;
  std::vector<std::shared_ptr<PsServer>> servers_, retired_;
  std::vector<std::unique_ptr<net::Listener>> listeners_;
  std::vector<std::shared_ptr<net::Transport>> transports_;
  std::map<std::string, std::string> store_;
  std::int64_t generation_ = 1;
  int launches_ = 0;
};

fs::path temp(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("trib_ps_restore_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

struct Outcome {
  std::vector<std::int64_t> chief_steps;  // every step the chief applied, in order
  std::vector<train::RunSummary> summaries;
};

// Runs 2 workers for `steps`; server 1 is killed and relaunched once the chief applied step
// `kill_at` (from the chief's own thread, so the point is exact).
Outcome run(RestoreCluster& cluster, std::int64_t steps, std::int64_t checkpoint_every, std::int64_t kill_at,
            const fs::path& out, bool slow_worker = true) {
  std::FILE* quiet = std::fopen("/dev/null", "w");
  Outcome o;
  o.summaries.resize(2);
  std::atomic<bool> killed{false};
  std::vector<std::thread> threads;
  for (int w = 0; w < 2; ++w) {
    train::TrainerOptions t = cluster.worker(job(steps, checkpoint_every), w, out, quiet);
    if (w == 0)
      t.on_step = [&](std::int64_t s, double) {
        o.chief_steps.push_back(s);
        if (s == kill_at && !killed.exchange(true)) cluster.kill_and_relaunch(1);
      };
    else if (slow_worker)  // still training when the server is lost (a worker done by then redoes nothing)
      t.on_step = [](std::int64_t, double) { std::this_thread::sleep_for(std::chrono::milliseconds(3)); };
    threads.emplace_back([&o, t, w] { o.summaries[w] = train::train(t); });
  }
  for (auto& t : threads) t.join();
  std::fclose(quiet);
  return o;
}

std::int64_t times_applied(const std::vector<std::int64_t>& steps, std::int64_t step) {
  return std::count(steps.begin(), steps.end(), step);
}

TEST(PsRestore, ALostServerIsRestoredFromTheNewestCheckpointAndEveryWorkerRedoesTheStepsSinceIt) {
  const fs::path out = temp("checkpoint");
  RestoreCluster cluster(2);
  Outcome o = run(cluster, 60, 20, 25, out);
  for (const train::RunSummary& s : o.summaries) EXPECT_EQ(s.steps, 60);
  // The chief was at step 25 (its next push failed at step 25 -> 26): back to checkpoint 20, so
  // steps 21..25 were applied twice, and none before or after.
  for (std::int64_t s = 21; s <= 25; ++s) EXPECT_EQ(times_applied(o.chief_steps, s), 2) << "step " << s;
  EXPECT_EQ(times_applied(o.chief_steps, 20), 1);
  EXPECT_EQ(times_applied(o.chief_steps, 27), 1);
  EXPECT_EQ(o.chief_steps.back(), 60);
  // Server 0 kept running and was rolled back; the relaunched server 1 was restored (its first
  // init or restore is not a rollback of its own).
  EXPECT_EQ(cluster.server(0).stats().rollbacks, 1u);
  // The announcement names the checkpoint, and both workers reported their steps redone.
  std::optional<std::string> notice = cluster.lookup(kRestoreKey);
  ASSERT_TRUE(notice.has_value());
  nlohmann::json n = nlohmann::json::parse(*notice);
  EXPECT_EQ(n["step"], 20);
  EXPECT_NE(n["checkpoint"].get<std::string>().find("ckpt-20"), std::string::npos) << *notice;
  EXPECT_EQ(n["lost"], "ps 1");
  // The checkpoint's manifest sections travel with it (a stream job's Kafka offsets are one).
  EXPECT_TRUE(n["sections"].is_object()) << *notice;
  const std::int64_t g = n["generation"].get<std::int64_t>();
  EXPECT_EQ(cluster.lookup(redone_key(g, 0)), "5");
  EXPECT_TRUE(cluster.lookup(redone_key(g, 1)).has_value());
  fs::remove_all(out);
}

TEST(PsRestore, WithNoCheckpointYetTheJobRestartsFromTheInitialValuesAtStepZero) {
  const fs::path out = temp("initial");
  RestoreCluster cluster(2);
  Outcome o = run(cluster, 30, 1000, 6, out);
  for (const train::RunSummary& s : o.summaries) EXPECT_EQ(s.steps, 30);
  for (std::int64_t s = 1; s <= 6; ++s) EXPECT_EQ(times_applied(o.chief_steps, s), 2) << "step " << s;
  EXPECT_EQ(times_applied(o.chief_steps, 7), 1);
  nlohmann::json n = nlohmann::json::parse(cluster.lookup(kRestoreKey).value_or("{}"));
  EXPECT_EQ(n["step"], 0);
  EXPECT_EQ(n["checkpoint"], "") << "the initial values";
  EXPECT_TRUE(n["data_position"].is_null());
  EXPECT_TRUE(n["sections"].is_null()) << "no checkpoint, no sections";
  fs::remove_all(out);
}

TEST(PsRestore, SyncWorkersRollBackTogetherAndRedoTheSameSteps) {
  const fs::path out = temp("sync");
  RestoreCluster cluster(2, Mode::sync);
  Outcome o = run(cluster, 40, 10, 15, out, /*slow_worker=*/false);
  for (const train::RunSummary& s : o.summaries) EXPECT_EQ(s.steps, 40);
  for (std::int64_t s = 11; s <= 15; ++s) EXPECT_EQ(times_applied(o.chief_steps, s), 2) << "step " << s;
  nlohmann::json n = nlohmann::json::parse(cluster.lookup(kRestoreKey).value_or("{}"));
  EXPECT_EQ(n["step"], 10);
  const std::int64_t g = n["generation"].get<std::int64_t>();
  // In step with the chief: at step 15, or still at 14 if the lost server's reply to its last
  // pull went down with it.
  EXPECT_EQ(cluster.lookup(redone_key(g, 0)), "5");
  const std::string other = cluster.lookup(redone_key(g, 1)).value_or("none");
  EXPECT_TRUE(other == "5" || other == "4") << other;
  EXPECT_EQ(cluster.server(0).stats().rollbacks, 1u);
  fs::remove_all(out);
}

TEST(PsRestore, AServerLostAfterTheChiefsLastStepIsRestoredAndTheOthersFinish) {
  const fs::path out = temp("chief_done");
  RestoreCluster cluster(2);
  std::FILE* quiet = std::fopen("/dev/null", "w");
  std::atomic<std::int64_t> chief_last{0};
  std::vector<std::int64_t> other_steps;
  std::vector<train::RunSummary> summaries(2);
  train::TrainerOptions chief = cluster.worker(job(40, 10), 0, out, quiet);
  chief.on_step = [&](std::int64_t s, double) { chief_last = s; };
  train::TrainerOptions other = cluster.worker(job(40, 10), 1, out, quiet);
  bool killed = false;
  other.on_step = [&](std::int64_t s, double) {
    other_steps.push_back(s);
    if (s == 35 && !killed) {
      // The chief took its last step (40) and is finishing: it waits for this worker.
      while (chief_last.load() < 40) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      cluster.kill_and_relaunch(1);
      killed = true;
    }
    if (chief_last.load() < 40) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  };
  std::thread t0([&] { summaries[0] = train::train(chief); });
  std::thread t1([&] { summaries[1] = train::train(other); });
  t0.join();
  t1.join();
  std::fclose(quiet);
  ASSERT_TRUE(killed);
  EXPECT_EQ(summaries[0].steps, 40);
  EXPECT_EQ(summaries[1].steps, 40);
  // The newest checkpoint at the loss was 30 (the final one comes after finish): worker 1
  // went back there and redid 31..35; the chief, done, redid nothing.
  nlohmann::json n = nlohmann::json::parse(cluster.lookup(kRestoreKey).value_or("{}"));
  EXPECT_EQ(n["step"], 30);
  const std::int64_t g = n["generation"].get<std::int64_t>();
  EXPECT_EQ(cluster.lookup(redone_key(g, 0)), "0");
  EXPECT_EQ(cluster.lookup(redone_key(g, 1)), "5");
  for (std::int64_t s = 31; s <= 35; ++s) EXPECT_EQ(times_applied(other_steps, s), 2) << "step " << s;
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib::ps
