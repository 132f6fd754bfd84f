// The sweep's line protocol with a forked trial (sweep/trial_control.h), and forking a
// function as a child process (cluster/child_process.h): what a forked trial is made of.
#include <gtest/gtest.h>

#include <unistd.h>

#include <chrono>
#include <stdexcept>
#include <thread>

#include "cluster/child_process.h"
#include "sweep/trial_control.h"

namespace trib::sweep {
namespace {

using namespace std::chrono_literals;

// Everything the child printed, once it has exited.
std::vector<std::string> drain(cluster::ChildProcess& child) {
  std::vector<std::string> out;
  for (int i = 0; i < 2000 && !(child.poll_exit() && child.output_closed()); ++i) {
    for (std::string& line : child.read_lines()) out.push_back(std::move(line));
    std::this_thread::sleep_for(5ms);
  }
  for (std::string& line : child.read_lines()) out.push_back(std::move(line));
  return out;
}

TEST(ControlChannel, CarriesLinesBothWaysAndSaysWhenTheOtherEndIsGone) {
  auto [a_fd, b_fd] = ControlChannel::socket_pair();
  ControlChannel a(a_fd);
  auto b = std::make_unique<ControlChannel>(b_fd);
  EXPECT_TRUE(b->poll_lines().empty());  // nothing yet: no waiting
  ASSERT_TRUE(a.send("go 300"));
  ASSERT_TRUE(a.send("stop"));
  EXPECT_EQ(b->wait_line(), "go 300");
  EXPECT_EQ(b->poll_lines(), (std::vector<std::string>{"stop"}));
  ASSERT_TRUE(b->send("paused"));
  EXPECT_EQ(a.wait_line(), "paused");
  b.reset();                           // the trial's end closes
  EXPECT_EQ(a.wait_line(), std::nullopt);
  EXPECT_FALSE(a.send("end"));         // false, not SIGPIPE
  EXPECT_TRUE(a.poll_lines().empty());
}

TEST(ForkedChild, RunsTheFunctionWithTheParentsMemoryAndItsReturnIsTheStatus) {
  std::vector<int> loaded(1000, 7);  // as a sweep's datasets: there in the child, not reloaded
  auto [mine, theirs] = ControlChannel::socket_pair();
  ControlChannel parent(mine);
  cluster::ChildProcess child("trial-0000", [&, theirs = theirs, mine = mine] {
    ::close(mine);
    ControlChannel control(theirs);
    std::printf("sum %d\n", [&] { int s = 0; for (int v : loaded) s += v; return s; }());
    control.send("paused");
    std::optional<std::string> line = control.wait_line();
    std::printf("told %s\n", line.value_or("nothing").c_str());
    return 3;
  });
  ::close(theirs);
  EXPECT_EQ(parent.wait_line(), "paused");
  parent.send("go 900");
  std::vector<std::string> out = drain(child);
  EXPECT_EQ(out, (std::vector<std::string>{"sum 7000", "told go 900"}));
  EXPECT_FALSE(child.succeeded());
  EXPECT_EQ(child.describe_exit(), "exited with status 3");
  EXPECT_GE(child.cpu_s(), 0.0);
}

TEST(ForkedChild, AnExceptionIsAnErrorLineAndStatusOne) {
  cluster::ChildProcess child("trial-0001", []() -> int { throw std::runtime_error("cannot open 'x.gz': no such file"); });
  std::vector<std::string> out = drain(child);
  EXPECT_EQ(out, (std::vector<std::string>{"trib: error: cannot open 'x.gz': no such file"}));
  EXPECT_EQ(child.describe_exit(), "exited with status 1");
}

}  // namespace
}  // namespace trib::sweep
