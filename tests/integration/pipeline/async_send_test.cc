// Queued sends (StageLinksOptions::async_send): they arrive in order, closing the links hands
// what is queued to the transport first, and a send to a lost neighbour fails the next wait,
// naming it.
#include <gtest/gtest.h>

#include <thread>

#include "integration/pipeline/stage_threads.h"

namespace trib::pipeline {
namespace {

struct LinkedPair {
  std::shared_ptr<net::InProcHub> hub = std::make_shared<net::InProcHub>();
  std::vector<std::unique_ptr<StageLinks>> links;

  LinkedPair() {
    std::vector<std::string> addresses;
    for (int s = 0; s < 2; ++s) {
      links.push_back(std::make_unique<StageLinks>(StageLinksOptions{testing::inproc(hub, s), s, 2, 0, std::chrono::seconds(30)}));
      addresses.push_back(links.back()->listen("stage:0"));
    }
    std::thread second([&] { links[1]->connect(""); });
    links[0]->connect(addresses[1]);
    second.join();
  }
};

Tensor filled(std::int64_t n, float v) {
  Tensor t = Tensor::empty(DType::f32, Shape{n});
  for (std::int64_t i = 0; i < n; ++i) t.data<float>()[i] = v;
  return t;
}

TEST(PipelineLinks, QueuedSendsArriveInOrder) {
  LinkedPair p;
  constexpr int kMessages = 64;
  for (int m = 0; m < kMessages; ++m)
    p.links[0]->send({Kind::activation, 1, m, 1, Tensor(), filled(1024, static_cast<float>(m))});
  for (int m = 0; m < kMessages; ++m) {
    Envelope e = testing::within(30, [&] { return p.links[1]->receive(Kind::activation, 1, m); });
    ASSERT_EQ(e.tensor.numel(), 1024);
    EXPECT_EQ(e.tensor.data<float>()[1023], static_cast<float>(m)) << "micro-batch " << m;
  }
  p.links[0]->flush();
  EXPECT_EQ(p.links[0]->bytes_forward(), kMessages * (1024 * 4 + 28));  // tensor and header
}

// close() hands what is queued to the transport first (and does not hang doing so); what the
// receiver's transport has not served when the connection closes is dropped, as before.
TEST(PipelineLinks, ClosingWithSendsQueuedHandsThemOverAndReturns) {
  LinkedPair p;
  for (int m = 0; m < 64; ++m) p.links[0]->send({Kind::activation, 1, m, 1, Tensor(), filled(1024, 1)});
  testing::within(30, [&] {
    p.links[0]->close();
    return 0;
  });
  EXPECT_EQ(p.links[0]->bytes_forward(), 64 * (1024 * 4 + 28));
}

TEST(PipelineLinks, ASendToALostNeighbourFailsTheNextWaitNamingIt) {
  LinkedPair p;
  p.links[1]->close();
  try {
    testing::within(30, [&] {
      for (int m = 0;; ++m) {  // a queued send to it, or its connection's close, marks it lost
        p.links[0]->send({Kind::activation, 1, m, 1, Tensor(), filled(8, 1)});
        p.links[0]->flush();
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
      return 0;
    });
    FAIL() << "stage 0 kept sending to a closed stage 1";
  } catch (const Unavailable& e) {
    EXPECT_NE(std::string(e.what()).find("pipeline stage 0: stage 1 (worker 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("was lost"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trib::pipeline
