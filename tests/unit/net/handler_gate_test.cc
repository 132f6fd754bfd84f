// The gate between a transport's handlers and their owner (net/handler_gate.h): shutting it
// waits for a handler inside, and no handler reaches the owner after.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "trib/net/handler_gate.h"

namespace trib::net {
namespace {

using namespace std::chrono_literals;

struct Owner {
  std::atomic<int> served{0};
};

TEST(HandlerGate, AHandlerReachesTheOwnerWhileTheGateIsOpen) {
  Owner owner;
  auto gate = open_handler_gate(&owner);
  auto pass = gate->enter();
  ASSERT_TRUE(pass);
  pass->served++;
  EXPECT_EQ(owner.served, 1);
}

TEST(HandlerGate, ShutWaitsForAHandlerInsideAndNoneEntersAfter) {
  auto owner = std::make_unique<Owner>();
  auto gate = open_handler_gate(owner.get());
  std::promise<void> inside, release;
  std::thread handler([&, gate] {
    auto pass = gate->enter();
    inside.set_value();
    if (!pass) return;
    release.get_future().wait();
    pass->served++;  // the owner must still be alive here
  });
  inside.get_future().wait();
  auto shut = std::async(std::launch::async, [&] { gate->shut(); });
  EXPECT_EQ(shut.wait_for(100ms), std::future_status::timeout) << "shut() returned with a handler inside";
  release.set_value();
  shut.get();
  handler.join();
  EXPECT_EQ(owner->served, 1) << "the handler was let in and reached the owner";
  owner.reset();  // what an owner does once its gate is shut
  EXPECT_FALSE(gate->enter()) << "a handler after the shut reached a destroyed owner";
  gate->shut();  // idempotent
}

TEST(HandlerGate, SeveralHandlersAreInsideAtOnce) {
  Owner owner;
  auto gate = open_handler_gate(&owner);
  auto first = gate->enter();
  auto second = std::async(std::launch::async, [&] { return static_cast<bool>(gate->enter()); });
  ASSERT_EQ(second.wait_for(5s), std::future_status::ready) << "a second handler waited for the first";
  EXPECT_TRUE(second.get());
}

}  // namespace
}  // namespace trib::net
