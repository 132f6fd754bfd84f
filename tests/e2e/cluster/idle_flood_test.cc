// Idle connections are the cheapest attack on a job's start: anyone who can reach its
// ports opens connections and says nothing. Here 200 of them are reopened in a loop against
// every listening port of a real job (the coordinator's, then the parameter server's, as
// soon as it prints it), from the same address as the job's own roles (127.0.0.1), while
// the job starts and trains to its end. Loopback only; the loop is bounded.
#include <arpa/inet.h>
#include <fcntl.h>

#include <atomic>
#include <deque>
#include <mutex>

#include "e2e/trib_process.h"

namespace trib::testing {
namespace {

class IdleFlood {
 public:
  static constexpr std::size_t kOpen = 200;

  IdleFlood() : thread_([this] { run(); }) {}
  ~IdleFlood() {
    stop_ = true;
    thread_.join();
    for (int fd : open_) ::close(fd);
  }
  void add_target(int port) {
    std::lock_guard lock(mu_);
    ports_.push_back(port);
  }
  std::uint64_t opened() const { return opened_.load(); }

 private:
  void run() {
    // Bounded: at most ten minutes of connections, whatever happens to the test.
    auto until = Clock::now() + 600s;
    while (!stop_ && Clock::now() < until) {
      std::vector<int> ports;
      {
        std::lock_guard lock(mu_);
        ports = ports_;
      }
      for (int port : ports) {
        int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_port = htons(static_cast<std::uint16_t>(port));
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        ::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);  // in progress; never a byte
        open_.push_back(fd);
        ++opened_;
        while (open_.size() > kOpen) {  // reopen: the oldest goes, a fresh one came
          ::close(open_.front());
          open_.pop_front();
        }
      }
      std::this_thread::sleep_for(5ms);  // about 200 new connections a second per port
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<std::uint64_t> opened_{0};
  std::mutex mu_;
  std::vector<int> ports_;
  std::deque<int> open_;
  std::thread thread_;
};

int port_of(const std::string& address) { return std::stoi(address.substr(address.rfind(':') + 1)); }

TEST(IdleFlood, JobStartsAndFinishesWhileIdleConnectionsAreReopenedAgainstEveryPort) {
  TempDir dir("idle_flood");
  std::string secret = dir.file("secret", kSecretHex);
  std::string job = dir.file("job.yaml", tiny_job("cluster: {ps: 1, workers: 1}\n"));
  Trib coordinator("coordinator", {"coordinator", job, "--listen", "127.0.0.1:0", "--secret-file", secret, "--output",
                                   (dir.path() / "run").string()});
  ASSERT_TRUE(wait_until({&coordinator}, [&] { return coordinator.printed("waiting for"); }, 20s))
      << coordinator.output();
  std::string address = coordinator.find("listening at ([0-9.]+:[0-9]+)");
  ASSERT_FALSE(address.empty()) << coordinator.output();

  IdleFlood flood;
  flood.add_target(port_of(address));
  std::this_thread::sleep_for(500ms);  // the flood is under way before any role joins
  Trib ps("ps", {"ps", "--join", address, "--secret-file", secret, "--timeout", "60"});
  std::vector<Trib*> all{&coordinator, &ps};
  ASSERT_TRUE(wait_until(all, [&] { return ps.printed("serving at") || ps.exited(); }, 60s)) << transcript(all);
  std::string ps_address = ps.find("serving at ([0-9.]+:[0-9]+)");
  ASSERT_FALSE(ps_address.empty()) << transcript(all);
  flood.add_target(port_of(ps_address));
  Trib worker("worker", {"worker", "--join", address, "--secret-file", secret, "--timeout", "60"});
  all.push_back(&worker);
  ASSERT_TRUE(wait_until(all, [&] { return coordinator.exited() && ps.exited() && worker.exited(); }, 240s))
      << transcript(all);
  EXPECT_EQ(coordinator.exit_code(), 0) << transcript(all);
  EXPECT_EQ(ps.exit_code(), 0) << transcript(all);
  EXPECT_EQ(worker.exit_code(), 0) << transcript(all);
  EXPECT_TRUE(worker.printed("done: test accuracy")) << transcript(all);
  EXPECT_GT(flood.opened(), IdleFlood::kOpen) << "the flood did not run";
  // The flood is summed up, not logged line by line: a few lines per 10 s at most.
  EXPECT_LT(std::count(coordinator.output().begin(), coordinator.output().end(), '\n'), 200)
      << coordinator.output();
}

}  // namespace
}  // namespace trib::testing
