// strategy.ps_replicas: 1 with the servers and workers as threads of this process over the
// in-process transport. Each "server" i runs the primary of shard i and the backup of shard
// (i - 1) mod 2 behind listeners of their own, the primary forwarding through a BackupLink as
// `trib ps` does. A server is "killed" by closing both its listeners and silencing it (as a
// kill -9 would): workers fail over to the shard's backup, with no rollback (no restore is
// ever announced) and no lost or doubled update.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

#include "ps/ps_wire.h"
#include "trib/cluster/store.h"
#include "trib/config/job_config.h"
#include "trib/net/inproc_transport.h"
#include "trib/net/net_context.h"
#include "trib/ps/backup_link.h"
#include "trib/ps/ps_backup.h"
#include "trib/ps/ps_server.h"
#include "trib/ps/strategy_ps.h"
#include "trib/train/trainer.h"

namespace trib::ps {
namespace {

namespace fs = std::filesystem;

config::JobConfig job(std::int64_t steps, std::int64_t checkpoint_every = 1000) {
  return config::load_job_config(
      std::string(TRIB_SOURCE_DIR) + "/examples/fashion_mlp.yaml",
      {"data.train_subset=2048", "data.test_subset=200", "training.steps=" + std::to_string(steps),
       "training.batch=32", "training.train_metrics=false", "threads.intra=1", "optimizer.name=adam",
       "optimizer.lr=0.001", "schedule.name=constant", "data.prefetch=0",
       "training.checkpoint_every=" + std::to_string(checkpoint_every),
       "training.eval_every=1000"});
}

std::vector<VariableInfo> variables() {
  return {{"dense_1/w", Shape{784, 256}}, {"dense_1/b", Shape{256}}, {"dense_2/w", Shape{256, 128}},
          {"dense_2/b", Shape{128}},      {"dense_3/w", Shape{128, 10}}, {"dense_3/b", Shape{10}}};
}

// Every tensor a checkpoint of `s` holds (values and optimizer slots), by name, as bytes.
std::map<std::string, std::string> state(PsServer& s) {
  std::map<std::string, std::string> out;
  for (std::int64_t part = 0, parts = 1; part < parts; ++part) {
    proto::Body b = proto::make_body(proto::Type::save);
    b.text = nlohmann::json{{"part", part}}.dump();
    net::Message m = s.handle(net::Message{proto::kPsMethod, proto::encode(b), Tensor()}, {"worker", 0, "test"});
    nlohmann::json j = nlohmann::json::parse(proto::decode(m.body).text);
    parts = j["parts"].get<std::int64_t>();
    // Raw bytes: values are f32, some slots (Adam's step) i64; bit-for-bit either way.
    out[j["name"]] = std::string(static_cast<const char*>(m.tensor.raw_data()), m.tensor.nbytes());
  }
  return out;
}

class ReplicaCluster {
 public:
  static constexpr int kServers = 2;

  ReplicaCluster(int workers, Mode mode) : workers_(workers), mode_(mode) {
    placement_ = place(variables(), kServers, parse_placement("round_robin"), 64 << 10);
    for (int i = 0; i < kServers; ++i) {
      primaries_.push_back(std::make_shared<PsServer>(options(i)));
      backups_.push_back(std::make_shared<PsBackup>(options(i)));  // backups_[i]: of shard i, on server i + 1
      dead_.push_back(std::make_shared<std::atomic<bool>>(false));
    }
    for (int i = 0; i < kServers; ++i) {
      auto s = primaries_[i];
      net::Handlers h;
      h.on_request = [this, s, i](net::Message m, const net::PeerIdentity& f) {
        if (dies_at_save_part(i, m)) {
          // Lost between two parts of a checkpoint's save: the request fails as a closed
          // connection would, and the server forwards nothing more.
          dead_[i]->store(true);
          throw Unavailable("server killed mid-save");
        }
        return s->handle(std::move(m), f);
      };
      h.on_close = [s](const net::PeerIdentity& peer, std::string_view) { s->connection_closed(peer); };
      listeners_.push_back(transport("ps", i)->listen(address(i), std::move(h)));
      auto b = backups_[i];
      b->set_claim([store = store_, i](std::int64_t e) { return claim(*store, i, e); });
      // Once it takes over, its changes go to a new backup (relaunch() attaches one).
      auto onward = std::make_shared<BackupLink>(i, BackupLink::Dial(), nullptr);
      onward->set_claim([store = store_, i](std::int64_t e) { return claim(*store, i, e); });
      onward_.push_back(onward);
      b->set_forward([onward, dead = dead_[(i + 1) % kServers]](const net::Message& frame, std::int64_t& epoch) {
        return dead->load() || onward->forward(frame, epoch);
      });
      net::Handlers hb;
      hb.on_request = [b](net::Message m, const net::PeerIdentity& f) { return b->handle(std::move(m), f); };
      hb.on_close = [b](const net::PeerIdentity& peer, std::string_view) { b->connection_closed(peer); };
      backup_listeners_.push_back(transport("ps", (i + 1) % kServers)->listen(backup_address(i), std::move(hb)));
      auto out = transport("ps", i);
      auto link = std::make_shared<BackupLink>(
          i, [out, i] { return BackupLink::Dialled{out->connect(backup_address(i)), backup_address(i)}; }, nullptr);
      link->set_claim([store = store_, i](std::int64_t e) { return claim(*store, i, e); });
      links_.push_back(link);
      // A killed server forwards nothing more (its process is gone).
      s->set_forward([link, dead = dead_[i]](const net::Message& frame, std::int64_t& epoch) {
        return dead->load() || link->forward(frame, epoch);
      });
    }
  }

  // As a kill -9 of server i: its primary (shard i) and the backup it holds (of shard i - 1).
  void kill(int i) {
    dead_[i]->store(true);
    listeners_[i].reset();
    backup_listeners_[(i + kServers - 1) % kServers].reset();
  }

  // Server i comes back (relaunched, after kill(i)) as the new backup of both shards: each
  // shard's server now (a primary that went on alone, or a backup that took over) sends it a
  // copy of its state while training goes on, and workers that lose that server find it.
  void relaunch(int i) {
    for (int shard = 0; shard < kServers; ++shard) {
      auto late = std::make_shared<PsBackup>(options(shard), /*copy_first=*/true);
      late->set_claim([store = store_, shard](std::int64_t e) { return claim(*store, shard, e); });
      late_.push_back(late);
      const std::string at = "new-backup-of-ps" + std::to_string(shard) + ":1";
      net::Handlers h;
      h.on_request = [late](net::Message m, const net::PeerIdentity& f) { return late->handle(std::move(m), f); };
      h.on_close = [late](const net::PeerIdentity& peer, std::string_view) { late->connection_closed(peer); };
      late_listeners_.push_back(transport("ps", i)->listen(at, std::move(h)));
      // The shard's server now: primary `shard` if alive, else the backup that took it over.
      const bool primary_alive = !dead_[shard]->load();
      PsServer& from = primary_alive ? *primaries_[shard] : backups_[shard]->server();
      BackupLink& link = primary_alive ? *links_[shard] : *onward_[shard];
      auto c = transport("ps", (shard + 1) % kServers)->connect(at);
      EXPECT_TRUE(from.send_state([&](const net::Message& m) { return link.attach({c, at}, m); }));
      std::lock_guard lock(*backup_mu_);
      (*backup_at_)[shard] = at;
    }
  }
  PsBackup& late_backup(int shard) { return *late_[static_cast<std::size_t>(shard)]; }

  // Worker `w` is cut off from server `i` (which stays alive and reachable by the others).
  void cut(int w, int i) { worker_conns_[w][i]->close(); }

  // Server i fails the save request for `part` (and is dead from then on).
  void kill_at_save_part(int i, std::int64_t part) {
    kill_server_ = i;
    kill_part_ = part;
  }

  PsServer& primary(int i) { return *primaries_[i]; }
  PsBackup& backup(int i) { return *backups_[i]; }

  train::TrainerOptions worker(const config::JobConfig& j, int index, const fs::path& out, std::FILE* log) {
    train::TrainerOptions o{j, out, false, false, log, {}, {}};
    o.distribution.worker_index = index;
    o.distribution.workers = workers_;
    std::vector<std::shared_ptr<net::Connection>> conns;
    auto t = transport("worker", index);
    for (int p = 0; p < kServers; ++p) conns.push_back(t->connect(address(p)));
    worker_conns_[index] = conns;
    PsRecoveryOptions r;  // no restore: only the backups
    r.backup = [t, mu = backup_mu_, at = backup_at_](int p, std::chrono::milliseconds) {
      std::string address;
      {
        std::lock_guard lock(*mu);
        address = at->count(p) ? at->at(p) : backup_address(p);
      }
      return t->connect(address);
    };
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

 private:
  bool dies_at_save_part(int i, const net::Message& m) {
    if (i != kill_server_ || dead_[i]->load()) return false;
    const proto::Body b = proto::decode(m.body);
    if (b.type() != proto::Type::save) return false;
    return nlohmann::json::parse(b.text).value("part", std::int64_t{-1}) == kill_part_;
  }

  static bool claim(cluster::Store& store, int shard, std::int64_t epoch) {
    return store.add("ps/" + std::to_string(shard) + "/epoch/" + std::to_string(epoch), 1) == 1;
  }
  static std::string address(int i) { return "ps" + std::to_string(i) + ":1"; }
  static std::string backup_address(int shard) { return "backup-of-ps" + std::to_string(shard) + ":1"; }

  PsServerOptions options(int i) const {
    return PsServerOptions{i, workers_, mode_, 2, 0, variables(), placement_, make_optimizer({.name = "adam"})};
  }

  std::shared_ptr<net::Transport> transport(const std::string& role, int index) {
    auto t = std::make_shared<net::InProcTransport>(net::NetContext::create(secret_, {role, index, ""}), hub_);
    transports_.push_back(t);
    return t;
  }

  int workers_;
  Mode mode_;
  std::atomic<int> kill_server_{-1};
  std::atomic<std::int64_t> kill_part_{-1};
  Placement placement_;
  std::shared_ptr<net::InProcHub> hub_ = std::make_shared<net::InProcHub>();
  net::ClusterSecret secret_ = net::ClusterSecret::generate();
  std::vector<std::shared_ptr<PsServer>> primaries_;
  std::vector<std::shared_ptr<PsBackup>> backups_;
  std::vector<std::shared_ptr<std::atomic<bool>>> dead_;
  std::vector<std::shared_ptr<BackupLink>> links_, onward_;
  std::vector<std::shared_ptr<PsBackup>> late_;
  std::vector<std::unique_ptr<net::Listener>> late_listeners_;
  std::shared_ptr<cluster::MemoryStore> store_ = std::make_shared<cluster::MemoryStore>();  // the shards' epochs
  std::shared_ptr<std::mutex> backup_mu_ = std::make_shared<std::mutex>();
  std::shared_ptr<std::map<int, std::string>> backup_at_ = std::make_shared<std::map<int, std::string>>();
  std::map<int, std::vector<std::shared_ptr<net::Connection>>> worker_conns_;
  std::vector<std::unique_ptr<net::Listener>> listeners_, backup_listeners_;
  std::vector<std::shared_ptr<net::Transport>> transports_;
};

fs::path temp(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("trib_ps_replica_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

struct Outcome {
  std::vector<std::int64_t> chief_steps;
  std::vector<train::RunSummary> summaries;
};

// `workers` workers for `steps`; `at_step` runs on the chief's thread after each step it
// applied (the faults: kill, relaunch, cut).
// `others_at_step` runs after each step of the workers other than the chief (worker, step).
Outcome run_with(ReplicaCluster& cluster, int workers, std::int64_t steps,
                 const std::function<void(std::int64_t)>& at_step, const fs::path& out,
                 std::int64_t checkpoint_every = 1000,
                 const std::function<void(int, std::int64_t)>& others_at_step = {}) {
  std::FILE* quiet = std::fopen("/dev/null", "w");
  Outcome o;
  o.summaries.resize(workers);
  std::vector<std::thread> threads;
  for (int w = 0; w < workers; ++w) {
    train::TrainerOptions t = cluster.worker(job(steps, checkpoint_every), w, out / std::to_string(w), quiet);
    if (w == 0)
      t.on_step = [&](std::int64_t s, double) {
        o.chief_steps.push_back(s);
        at_step(s);
      };
    else if (others_at_step)
      t.on_step = [&others_at_step, w](std::int64_t s, double) { others_at_step(w, s); };
    threads.emplace_back([&o, t, w] { o.summaries[w] = train::train(t); });
  }
  for (auto& t : threads) t.join();
  std::fclose(quiet);
  return o;
}

// Server 1 is killed once the chief applied step `kill_at` (never when it is negative).
Outcome run(ReplicaCluster& cluster, int workers, std::int64_t steps, std::int64_t kill_at, const fs::path& out,
            std::int64_t checkpoint_every = 1000) {
  return run_with(
      cluster, workers, steps, [&](std::int64_t s) { if (s == kill_at) cluster.kill(1); }, out, checkpoint_every);
}

TEST(PsReplicaFailover, ASyncJobLosingAServerEndsWithTheValuesOfARunWithoutTheLoss) {
  const fs::path out = temp("sync");
  // One sync worker: the run is deterministic, so the two runs must agree bit for bit.
  ReplicaCluster clean(1, Mode::sync);
  run(clean, 1, 40, -1, out / "clean");
  ReplicaCluster faulty(1, Mode::sync);
  Outcome o = run(faulty, 1, 40, 15, out / "faulty");
  EXPECT_EQ(o.summaries[0].steps, 40);
  // No rollback: every step taken once, in order.
  ASSERT_EQ(o.chief_steps.size(), 40u);
  for (std::int64_t s = 0; s < 40; ++s) EXPECT_EQ(o.chief_steps[s], s + 1);
  // (No restore could run: these workers have no recovery but the backups, so a loss the
  // failover did not absorb would have ended the run.)
  // Shard 1 is now served by its backup, which took over once and holds every update.
  EXPECT_TRUE(faulty.backup(1).acting());
  EXPECT_EQ(faulty.backup(1).server().stats().takeovers, 1u);
  EXPECT_EQ(faulty.backup(1).server().stats().applied, 40u);
  EXPECT_EQ(state(faulty.primary(0)), state(clean.primary(0)));
  EXPECT_EQ(state(faulty.backup(1).server()), state(clean.primary(1)));
  fs::remove_all(out);
}

TEST(PsReplicaFailover, AServerLostMidCheckpointIsSavedFromItsBackupAndTheRunGoesOn) {
  // Regression: the chief's save of server 1 failed over between its parts, and the backup,
  // which never saw part 0's snapshot, refused part 2; the run ended. The save now starts
  // over on the backup.
  const fs::path out = temp("mid_save");
  ReplicaCluster clean(1, Mode::sync);
  run(clean, 1, 30, -1, out / "clean", 10);
  ReplicaCluster faulty(1, Mode::sync);
  faulty.kill_at_save_part(1, 2);
  Outcome o = run(faulty, 1, 30, -1, out / "faulty", 10);
  EXPECT_EQ(o.summaries[0].steps, 30);
  ASSERT_EQ(o.chief_steps.size(), 30u) << "no step redone";
  EXPECT_TRUE(faulty.backup(1).acting());
  EXPECT_TRUE(fs::exists(out / "faulty" / "0" / "checkpoints" / "ckpt-10")) << "the checkpoint at the loss";
  EXPECT_EQ(state(faulty.primary(0)), state(clean.primary(0)));
  EXPECT_EQ(state(faulty.backup(1).server()), state(clean.primary(1)));
  fs::remove_all(out);
}

TEST(PsReplicaFailover, AsyncWorkersLosingAServerApplyEveryPushExactlyOnce) {
  const fs::path out = temp("async");
  ReplicaCluster cluster(2, Mode::async);
  Outcome o = run(cluster, 2, 40, 15, out);
  for (const train::RunSummary& s : o.summaries) EXPECT_EQ(s.steps, 40);
  ASSERT_EQ(o.chief_steps.size(), 40u) << "no step redone";
  // 2 workers x 40 steps, each push applied once on each shard: shard 0 on its primary all
  // along, shard 1 on its primary and then (everything forwarded, plus what came after the
  // loss) on its backup.
  EXPECT_EQ(cluster.primary(0).stats().applied, 80u);
  EXPECT_EQ(cluster.backup(1).server().stats().applied, 80u);
  EXPECT_TRUE(cluster.backup(1).acting());
  // Shard 0's backup lived on the killed server: shard 0 went on without one.
  EXPECT_FALSE(cluster.backup(0).acting());
  fs::remove_all(out);
}

TEST(PsReplicaFailover, ARelaunchedServerBecomesTheNewBackupAndASecondLossCostsNoStep) {
  // Server 1 is lost at step 10 (shard 1 goes to its backup on server 0, shard 0 on without
  // one), comes back at step 15 as the new backup of both shards (copied while training goes
  // on), and server 0, which by then serves both shards, is lost at step 25: both shards go
  // to the relaunched server. One sync worker: deterministic, so the values must be those of
  // a run without any loss, bit for bit.
  const fs::path out = temp("second_loss");
  ReplicaCluster clean(1, Mode::sync);
  run(clean, 1, 40, -1, out / "clean");
  ReplicaCluster faulty(1, Mode::sync);
  Outcome o = run_with(
      faulty, 1, 40,
      [&](std::int64_t s) {
        if (s == 10) faulty.kill(1);
        if (s == 15) faulty.relaunch(1);
        if (s == 25) faulty.kill(0);
      },
      out / "faulty");
  EXPECT_EQ(o.summaries[0].steps, 40);
  ASSERT_EQ(o.chief_steps.size(), 40u);
  for (std::int64_t s = 0; s < 40; ++s) EXPECT_EQ(o.chief_steps[s], s + 1) << "no step redone";
  for (int shard = 0; shard < 2; ++shard) {
    PsBackup& now = faulty.late_backup(shard);
    EXPECT_TRUE(now.acting()) << "shard " << shard;
    EXPECT_EQ(now.server().stats().applied, 40u) << "shard " << shard;
    // Shard 0: its primary went on alone (epoch 1), then the relaunched backup took over (2);
    // shard 1: taken over twice.
    EXPECT_EQ(now.server().epoch(), 2) << "shard " << shard;
    EXPECT_EQ(state(now.server()), state(clean.primary(shard))) << "shard " << shard;
  }
  fs::remove_all(out);
}

TEST(PsReplicaFailover, APrimaryCutOffFromOneWorkerIsFencedAndNoPushIsLostOrAppliedTwice) {
  // At step 15 worker 0 loses its connection to server 1, which stays alive and still serves
  // worker 1: worker 0 goes to the backup, which takes the shard over. Worker 1's next push
  // to server 1 is refused by the backup, so server 1 acknowledges nothing more (fenced) and
  // worker 1 follows to the backup. Every push lands exactly once on shard 1's new primary.
  const fs::path out = temp("fenced");
  ReplicaCluster cluster(2, Mode::async);
  // The workers are asynchronous: on a busy machine worker 1 could take all its 40 steps before
  // the chief's step 15, and then never push to server 1 after the takeover (server 1 was left
  // unfenced, 2 runs in 18). Worker 1 waits at its step 20 until the backup has taken over.
  Outcome o = run_with(
      cluster, 2, 40, [&](std::int64_t s) { if (s == 15) cluster.cut(0, 1); }, out, 1000,
      [&](int, std::int64_t s) {
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (s == 20 && !cluster.backup(1).acting() && std::chrono::steady_clock::now() < until)
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
      });
  for (const train::RunSummary& s : o.summaries) EXPECT_EQ(s.steps, 40);
  ASSERT_EQ(o.chief_steps.size(), 40u) << "no step redone";
  EXPECT_TRUE(cluster.backup(1).acting());
  EXPECT_EQ(cluster.backup(1).server().epoch(), 1);
  EXPECT_TRUE(cluster.primary(1).fenced());
  EXPECT_EQ(cluster.backup(1).server().stats().applied, 80u);
  EXPECT_EQ(cluster.primary(0).stats().applied, 80u);
  EXPECT_FALSE(cluster.primary(0).fenced());
  fs::remove_all(out);
}

}  // namespace
}  // namespace trib::ps
