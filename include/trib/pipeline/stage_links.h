// How a pipeline stage talks to its neighbours over the authenticated transport: activations
// (with the micro-batch's labels) go forward to the next stage, their gradients come back.
// Stage s listens for stage s - 1 and connects to stage s + 1, so each pair shares one
// connection. Messages are one-way; each lands in a mailbox keyed by (kind, step, micro-batch)
// that the stage's schedule takes them from in its own order. Sends are queued for a sender
// thread (StageLinksOptions::async_send), so that a pass does not wait for the transport.
//
// Failure: a neighbour's connection closing (the transport's heartbeats notice a dead or
// silent process within NetOptions::peer_timeout) fails every wait on that neighbour at once
// with Unavailable naming the stage and its peer; and no wait outlasts `timeout`, so nothing
// hangs.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <tuple>

#include "trib/net/handler_gate.h"
#include "trib/net/transport.h"

namespace trib::pipeline {

enum class Kind : std::uint32_t { activation = 0x50490001, gradient = 0x50490002, eval = 0x50490003 };

// What travels with a tensor.
struct Envelope {
  Kind kind = Kind::activation;
  std::int64_t step = 0;    // training step (1-based), or the evaluation round
  std::int32_t micro = 0;   // micro-batch (or evaluation batch) index
  std::int64_t count = 0;   // activation: the run's total steps; eval: the round's batches
  Tensor labels;            // activation and eval: i32 [b], for the last stage
  Tensor tensor;            // the activation or gradient
};

struct StageLinksOptions {
  std::shared_ptr<net::Transport> transport;
  int stage = 0;
  int stages = 1;
  int replica = 0;  // for messages only
  // The longest a stage waits for a neighbour's message or connection.
  std::chrono::milliseconds timeout{std::chrono::minutes(2)};
  // send() queues the message for a sender thread and returns: the transport's copy or
  // serialization (and its MAC) runs beside the next pass instead of before it. A send that
  // fails marks the neighbour lost, as its connection closing would. Off: send() writes.
  bool async_send = true;
};

class StageLinks {
 public:
  explicit StageLinks(StageLinksOptions options);
  ~StageLinks();
  StageLinks(const StageLinks&) = delete;
  StageLinks& operator=(const StageLinks&) = delete;

  // Step 1: listen (not on stage 0) at "host:port"; returns the address stage - 1 dials.
  std::string listen(const std::string& address);
  // Step 2: dial stage + 1 at `next` (not on the last stage), then wait for stage - 1 to dial in.
  void connect(const std::string& next);

  void send(Envelope e);  // to the next stage (activation, eval) or the previous (gradient)
  // Waits until every queued message has been handed to the transport (or its neighbour was lost).
  void flush();
  // Waits for the message of this kind, step and micro-batch from the neighbour that sends it.
  Envelope receive(Kind kind, std::int64_t step, std::int32_t micro);
  // The first activation or eval message of `step` (micro-batch 0), whichever comes.
  Envelope receive_first(std::int64_t step, std::int64_t eval_round);

  // Throws Unavailable naming the first neighbour lost, if any (for waits outside the links).
  void check_neighbours();

  // Bytes sent to each neighbour so far.
  std::int64_t bytes_forward() const { return bytes_forward_; }
  std::int64_t bytes_backward() const { return bytes_backward_; }
  void close();  // flushes first

 private:
  struct Outgoing {
    std::shared_ptr<net::Connection> to;
    int neighbour = 0;
    bool backward = false;
    net::Message message;
  };
  void write(Outgoing& out);  // to the transport; a failure marks the neighbour lost
  void sender_main();

  using Key = std::tuple<std::uint32_t, std::int64_t, std::int32_t>;
  // The transport's handlers, for messages from and the loss of stage `neighbour`.
  net::Handlers handlers(int neighbour);
  void deliver(const net::Message& m);
  void lost(int neighbour, const std::string& who, std::string_view reason);
  std::string name(int stage) const;
  // Throws when the neighbour `from` is gone, or `until` has passed (naming `what`).
  void check(std::unique_lock<std::mutex>& lock, int from, std::chrono::steady_clock::time_point until,
             const std::string& what);

  StageLinksOptions o_;
  std::unique_ptr<net::Listener> listener_;
  std::shared_ptr<net::Connection> next_, prev_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<Key, Envelope> mailbox_;
  std::map<int, std::string> lost_;  // neighbour stage -> why
  std::atomic<std::int64_t> bytes_forward_ = 0, bytes_backward_ = 0;
  // The send queue (async_send), guarded by mu_: the sender thread writes in order.
  std::deque<Outgoing> outbox_;
  bool writing_ = false, stopping_ = false;
  std::condition_variable outbox_cv_;
  std::thread sender_;
  // The transport's handlers reach this object only through the gate, which close() shuts
  // first (net/handler_gate.h).
  std::shared_ptr<net::HandlerGate<StageLinks>> gate_ = net::open_handler_gate(this);
};

}  // namespace trib::pipeline
