// The in-process registry: every change starts a generation, and watchers hear of it.
#include <gtest/gtest.h>

#include <future>

#include "trib/cluster/memory_registry.h"
#include "trib/core/error.h"

namespace trib::cluster {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

TEST(MemoryRegistry, EveryEntryLeaveAndEvictionStartsAGeneration) {
  MemoryRegistry reg;
  EXPECT_EQ(reg.roster().generation, 0);
  auto a = reg.enter("worker/0", "h:1", 1000ms);
  auto b = reg.enter("worker/1", "h:2", 1000ms);
  Roster r = reg.roster();
  EXPECT_EQ(r.generation, 2);
  EXPECT_EQ(r.members, (std::map<std::string, std::string>{{"worker/0", "h:1"}, {"worker/1", "h:2"}}));
  b.reset();  // leaves
  EXPECT_EQ(reg.roster().generation, 3);
  EXPECT_FALSE(reg.roster().members.contains("worker/1"));
  reg.evict("worker/0");
  EXPECT_FALSE(a->alive()) << "an evicted member is told so";
  EXPECT_EQ(reg.roster().generation, 4);
  reg.evict("worker/0");  // already gone: nothing changes
  EXPECT_EQ(reg.roster().generation, 4);
  // The evicted member comes back as a new member; its old registration stays dead.
  auto again = reg.enter("worker/0", "h:3", 1000ms);
  EXPECT_TRUE(again->alive());
  EXPECT_FALSE(a->alive());
  a.reset();  // destroying the stale registration does not remove the new member
  EXPECT_EQ(reg.roster().members.at("worker/0"), "h:3");
  EXPECT_EQ(reg.roster().generation, 5);
}

TEST(MemoryRegistry, AdvancingMovesTheGenerationUpNeverDown) {
  MemoryRegistry r;
  r.advance_to(41);  // a restarted coordinator carries on from its predecessor's generation
  EXPECT_EQ(r.roster().generation, 41);
  auto a = r.enter("worker/0", "x", Millis(1000));
  EXPECT_EQ(r.roster().generation, 42);
  r.advance_to(10);
  EXPECT_EQ(r.roster().generation, 42);
}

TEST(MemoryRegistry, ANameTakenIsRefused) {
  MemoryRegistry reg;
  auto a = reg.enter("ps/0", "x", 1000ms);
  try {
    reg.enter("ps/0", "y", 1000ms);
    FAIL() << "a second ps/0 entered";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("member 'ps/0' is already registered"), std::string::npos) << e.what();
  }
  EXPECT_THROW(reg.enter("", "y", 1000ms), InvalidArgument);
}

TEST(MemoryRegistry, AWatcherHearsOfTheNextGenerationAndTimesOutWithoutOne) {
  MemoryRegistry reg;
  auto a = reg.enter("worker/0", "x", 1000ms);
  std::int64_t seen = reg.roster().generation;
  auto watcher = std::async(std::launch::async, [&] { return reg.wait_for_change(seen, Clock::now() + 20s); });
  auto b = reg.enter("worker/1", "y", 1000ms);
  Roster r = watcher.get();
  EXPECT_GT(r.generation, seen);
  EXPECT_TRUE(r.members.contains("worker/1"));
  Roster same = reg.wait_for_change(reg.roster().generation, Clock::now() + 10ms);
  EXPECT_EQ(same.generation, reg.roster().generation);
}

}  // namespace
}  // namespace trib::cluster
