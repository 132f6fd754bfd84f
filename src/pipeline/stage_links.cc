#include "trib/pipeline/stage_links.h"

#include <cstring>
#include <thread>

#include "trib/core/error.h"

namespace trib::pipeline {

namespace {

// The body: a fixed little-endian header, then the labels (i32) if any. Lengths are checked
// before anything is copied.
constexpr std::size_t kHeader = 8 + 4 + 8 + 8;

template <typename T>
void put(std::string& out, T v) {
  unsigned char b[sizeof(T)];
  for (std::size_t i = 0; i < sizeof(T); ++i) b[i] = static_cast<unsigned char>(static_cast<std::uint64_t>(v) >> (8 * i));
  out.append(reinterpret_cast<const char*>(b), sizeof(T));
}

template <typename T>
T get(const std::string& in, std::size_t at) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < sizeof(T); ++i) v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[at + i])) << (8 * i);
  return static_cast<T>(v);
}

std::string encode(const Envelope& e) {
  std::string body;
  put<std::int64_t>(body, e.step);
  put<std::int32_t>(body, e.micro);
  put<std::int64_t>(body, e.count);
  const std::int64_t labels = e.labels.defined() ? e.labels.numel() : 0;
  put<std::int64_t>(body, labels);
  for (std::int64_t i = 0; i < labels; ++i) put<std::int32_t>(body, e.labels.data<std::int32_t>()[i]);
  return body;
}

Envelope decode(const net::Message& m) {
  TRIB_CHECK(m.body.size() >= kHeader, InvalidArgument, "pipeline message of {} bytes: shorter than its header",
             m.body.size());
  Envelope e;
  e.kind = static_cast<Kind>(m.method);
  e.step = get<std::int64_t>(m.body, 0);
  e.micro = get<std::int32_t>(m.body, 8);
  e.count = get<std::int64_t>(m.body, 12);
  const std::int64_t labels = get<std::int64_t>(m.body, 20);
  TRIB_CHECK(labels >= 0 && m.body.size() == kHeader + static_cast<std::size_t>(labels) * 4, InvalidArgument,
             "pipeline message claims {} labels in {} bytes", labels, m.body.size());
  if (labels > 0) {
    e.labels = Tensor::empty(DType::i32, Shape{labels});
    for (std::int64_t i = 0; i < labels; ++i)
      e.labels.data<std::int32_t>()[i] = get<std::int32_t>(m.body, kHeader + static_cast<std::size_t>(i) * 4);
  }
  e.tensor = m.tensor;
  return e;
}

bool known_kind(std::uint32_t method) {
  return method == static_cast<std::uint32_t>(Kind::activation) || method == static_cast<std::uint32_t>(Kind::gradient) ||
         method == static_cast<std::uint32_t>(Kind::eval);
}

}  // namespace

StageLinks::StageLinks(StageLinksOptions options) : o_(std::move(options)) {
  TRIB_CHECK(o_.transport != nullptr && o_.stages >= 1 && o_.stage >= 0 && o_.stage < o_.stages, InvalidArgument,
             "pipeline links: stage {} of {}", o_.stage, o_.stages);
}

StageLinks::~StageLinks() { close(); }

std::string StageLinks::name(int stage) const {
  return o_.replica > 0 ? fmt::format("stage {} of replica {}", stage, o_.replica) : fmt::format("stage {}", stage);
}

void StageLinks::deliver(const net::Message& m) {
  TRIB_CHECK(known_kind(m.method), InvalidArgument, "pipeline {}: unknown message kind {:#x}", name(o_.stage), m.method);
  Envelope e = decode(m);
  std::lock_guard<std::mutex> lock(mu_);
  mailbox_[{m.method, e.step, e.micro}] = std::move(e);
  cv_.notify_all();
}

void StageLinks::lost(int neighbour, const std::string& who, std::string_view reason) {
  std::lock_guard<std::mutex> lock(mu_);
  lost_[neighbour] = fmt::format("pipeline {}: {} ({}) was lost: {}", name(o_.stage), name(neighbour), who, reason);
  cv_.notify_all();
}

net::Handlers StageLinks::handlers(int neighbour) {
  net::Handlers h;
  h.on_request = [gate = gate_](net::Message m, const net::PeerIdentity&) {
    if (auto links = gate->enter()) links->deliver(m);
    return net::Message{};
  };
  h.on_close = [gate = gate_, neighbour](const net::PeerIdentity& peer, std::string_view reason) {
    if (auto links = gate->enter()) links->lost(neighbour, peer.to_string(), reason);
  };
  return h;
}

std::string StageLinks::listen(const std::string& address) {
  if (o_.stage == 0) return "";
  listener_ = o_.transport->listen(address, handlers(o_.stage - 1));
  return listener_->address();
}

void StageLinks::connect(const std::string& next) {
  const auto until = std::chrono::steady_clock::now() + o_.timeout;
  if (o_.stage + 1 < o_.stages) {
    next_ = o_.transport->connect(next, handlers(o_.stage + 1));
  }
  if (o_.stage == 0) return;
  // Stage - 1 dials in; its connection is the one to send gradients back on.
  for (;;) {
    for (const auto& c : listener_->connections())
      if (c->is_open()) prev_ = c;
    if (prev_) return;
    TRIB_CHECK(std::chrono::steady_clock::now() < until, Timeout,
               "pipeline {}: {} did not connect within {} s", name(o_.stage), name(o_.stage - 1),
               std::chrono::duration_cast<std::chrono::seconds>(o_.timeout).count());
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void StageLinks::send(Envelope e) {
  const bool backward = e.kind == Kind::gradient;
  const std::shared_ptr<net::Connection>& to = backward ? prev_ : next_;
  const int neighbour = backward ? o_.stage - 1 : o_.stage + 1;
  TRIB_CHECK(to != nullptr, InvalidArgument, "pipeline {} has no {} to send to", name(o_.stage), name(neighbour));
  Outgoing out{to, neighbour, backward, net::Message{static_cast<std::uint32_t>(e.kind), encode(e), e.tensor}};
  {
    std::unique_lock<std::mutex> lock(mu_);
    check(lock, neighbour, std::chrono::steady_clock::time_point::max(), "");
    if (o_.async_send) {
      if (!sender_.joinable()) sender_ = std::thread([this] { sender_main(); });
      outbox_.push_back(std::move(out));
      outbox_cv_.notify_all();
      return;
    }
  }
  write(out);
}

void StageLinks::write(Outgoing& out) {
  const net::Message& m = out.message;
  const std::int64_t bytes = static_cast<std::int64_t>(m.body.size() + (m.tensor.defined() ? m.tensor.nbytes() : 0));
  try {
    out.to->notify(std::move(out.message));
  } catch (const std::exception& err) {
    std::string why = fmt::format("pipeline {}: {} ({}) was lost: {}", name(o_.stage), name(out.neighbour),
                                  out.to->peer().to_string(), err.what());
    if (!o_.async_send) throw Unavailable(why);
    std::lock_guard<std::mutex> lock(mu_);
    lost_.emplace(out.neighbour, std::move(why));  // the next send or receive on it throws
    cv_.notify_all();
    return;
  }
  (out.backward ? bytes_backward_ : bytes_forward_) += bytes;
}

void StageLinks::sender_main() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    outbox_cv_.wait(lock, [&] { return stopping_ || !outbox_.empty(); });
    if (outbox_.empty()) return;  // stopping, and everything queued is written
    Outgoing out = std::move(outbox_.front());
    outbox_.pop_front();
    writing_ = true;
    lock.unlock();
    write(out);
    lock.lock();
    writing_ = false;
    outbox_cv_.notify_all();
  }
}

void StageLinks::flush() {
  std::unique_lock<std::mutex> lock(mu_);
  outbox_cv_.wait(lock, [&] { return outbox_.empty() && !writing_; });
}

void StageLinks::check(std::unique_lock<std::mutex>&, int from, std::chrono::steady_clock::time_point until,
                       const std::string& what) {
  auto it = lost_.find(from);
  if (it != lost_.end()) throw Unavailable(it->second);
  TRIB_CHECK(std::chrono::steady_clock::now() < until, Timeout, "pipeline {}: {} sent no {} within {} s", name(o_.stage),
             name(from), what, std::chrono::duration_cast<std::chrono::seconds>(o_.timeout).count());
}

void StageLinks::check_neighbours() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!lost_.empty()) throw Unavailable(lost_.begin()->second);
}

Envelope StageLinks::receive(Kind kind, std::int64_t step, std::int32_t micro) {
  const int from = kind == Kind::gradient ? o_.stage + 1 : o_.stage - 1;
  const Key key{static_cast<std::uint32_t>(kind), step, micro};
  const auto until = std::chrono::steady_clock::now() + o_.timeout;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    auto it = mailbox_.find(key);
    if (it != mailbox_.end()) {
      Envelope e = std::move(it->second);
      mailbox_.erase(it);
      return e;
    }
    check(lock, from, until,
          fmt::format("{} for micro-batch {} of step {}", kind == Kind::gradient ? "gradient" : "activation", micro, step));
    cv_.wait_for(lock, std::chrono::milliseconds(200));
  }
}

Envelope StageLinks::receive_first(std::int64_t step, std::int64_t eval_round) {
  const Key train{static_cast<std::uint32_t>(Kind::activation), step, 0};
  const Key eval{static_cast<std::uint32_t>(Kind::eval), eval_round, 0};
  const auto until = std::chrono::steady_clock::now() + o_.timeout;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    for (const Key& key : {eval, train}) {
      auto it = mailbox_.find(key);
      if (it == mailbox_.end()) continue;
      Envelope e = std::move(it->second);
      mailbox_.erase(it);
      return e;
    }
    check(lock, o_.stage - 1, until, fmt::format("activation for step {}", step));
    cv_.wait_for(lock, std::chrono::milliseconds(200));
  }
}

void StageLinks::close() {
  // Waits for a handler inside the gate; none reaches this object after. First: the joins below
  // wait for receive threads, which may be on their way into the gate.
  gate_->shut();
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;  // the sender writes what is queued, then ends
  }
  outbox_cv_.notify_all();
  if (sender_.joinable()) sender_.join();
  if (next_) next_->close();
  listener_.reset();
  next_.reset();
  prev_.reset();
}

}  // namespace trib::pipeline
