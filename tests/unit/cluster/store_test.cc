#include <gtest/gtest.h>

#include <thread>

#include "trib/cluster/store.h"
#include "trib/core/error.h"

namespace trib::cluster {
namespace {

using namespace std::chrono_literals;

TEST(MemoryStore, SetGetAddAndScan) {
  MemoryStore s;
  EXPECT_FALSE(s.try_get("a"));
  s.set("a", "1");
  EXPECT_EQ(s.get("a", 10ms), "1");
  EXPECT_EQ(s.add("n", 1), 1);
  EXPECT_EQ(s.add("n", 5), 6);
  s.set("ps/0", "x");
  s.set("ps/1", "y");
  EXPECT_EQ(s.scan("ps/").size(), 2u);
}

TEST(MemoryStore, StaysWithinItsCapacityAndRefusesWhatWouldPassIt) {
  MemoryStore s(100);
  s.set("k", std::string(60, 'v'));
  s.set("k", std::string(90, 'w'));  // replacing counts the new value only
  try {
    s.set("other", std::string(20, 'x'));
    FAIL() << "the store grew past its capacity";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("more than its 100"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(s.try_get("other"));
  s.set("k", "1");  // shrinking frees room
  s.set("other", std::string(20, 'x'));
  EXPECT_EQ(s.add("k", 2), 3);
  EXPECT_THROW(s.add("other", 1), InvalidArgument);  // not a counter
}

TEST(MemoryStore, WaitReturnsWhenKeysAppear) {
  MemoryStore s;
  std::thread t([&] {
    std::this_thread::sleep_for(30ms);
    s.set("x", "1");
    s.set("y", "2");
  });
  s.wait({"x", "y"}, 5s);
  t.join();
}

TEST(MemoryStore, WaitTimesOutNamingTheMissingKeys) {
  MemoryStore s;
  s.set("here", "1");
  try {
    s.wait({"here", "missing"}, 50ms);
    FAIL();
  } catch (const Timeout& e) {
    EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("here,"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trib::cluster
