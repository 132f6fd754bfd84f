// Building PS requests by hand for tests: a header with the given fields, then any sparse
// table and ids, encoded as a worker would send them.
#pragma once

#include <vector>

#include "ps/ps_wire.h"
#include "trib/net/message.h"

namespace trib::ps::testing {

struct Request {
  explicit Request(proto::Type t, int w = 0, std::int64_t s = 0) : type(t), worker(w), step(s) {}

  proto::Type type;
  int worker = 0;
  std::int64_t step = 0;
  float lr = 1.0f;
  std::uint32_t wait_ms = 0;
  std::int64_t generation = 0;
  std::uint32_t seq = 0;  // push: its sequence number (strategy.ps_replicas)
  std::uint16_t flags = 0;
  std::vector<proto::SparseEntry> sparse;
  std::vector<std::int64_t> ids;
  std::string text;

  net::Message message(Tensor tensor = {}) const {
    proto::Body b = proto::make_body(type);
    b.header.worker = worker;
    b.header.step = step;
    b.header.wait_ms = wait_ms;
    b.header.generation = generation;
    b.header.seq = seq;
    b.header.flags = flags;
    proto::set_lr(b.header, lr);
    b.sparse = sparse;
    if (!ids.empty()) b.ids = Tensor::from_vector(Shape{static_cast<std::int64_t>(ids.size())}, ids);
    b.text = text;
    return net::Message{proto::kPsMethod, proto::encode(b), std::move(tensor)};
  }
};

}  // namespace trib::ps::testing
