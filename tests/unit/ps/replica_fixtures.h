// Servers of one small shard (two variables, six values, Adam) driven by hand, for the tests
// of strategy.ps_replicas (ps_replica_test.cc, ps_backup_join_test.cc).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ps_request.h"
#include "trib/optim/optimizer_config.h"
#include "trib/ps/ps_server.h"

namespace trib::ps::testing {

inline std::vector<VariableInfo> vars() { return {{"w", Shape{4}}, {"b", Shape{2}}}; }

inline PsServerOptions options(Mode mode, int workers = 2) {
  return PsServerOptions{0, workers, mode, 2, 0, vars(), place(vars(), 1, PlacementStrategy::greedy, 1 << 20),
                         make_optimizer({.name = "adam"})};
}

inline const net::PeerIdentity kChief{"worker", 0, "10.0.0.1:100"};
inline net::PeerIdentity worker_at(int w, const std::string& address) { return {"worker", w, address}; }

// Every tensor a checkpoint of `s` would hold (values and optimizer slots), by name, as bytes.
inline std::map<std::string, std::string> state(PsServer& s) {
  std::map<std::string, std::string> out;
  for (std::int64_t part = 0, parts = 1; part < parts; ++part) {
    Request r(proto::Type::save);
    r.text = nlohmann::json{{"part", part}}.dump();
    net::Message m = s.handle(r.message(), kChief);
    nlohmann::json j = nlohmann::json::parse(proto::decode(m.body).text);
    parts = j["parts"].get<std::int64_t>();
    // Raw bytes: values are f32, some slots (Adam's step) i64; bit-for-bit either way.
    out[j["name"]] = std::string(static_cast<const char*>(m.tensor.raw_data()), m.tensor.nbytes());
  }
  return out;
}

inline Tensor gradient(float v) {
  Tensor t = Tensor::full(Shape{6}, v);
  t.data<float>()[5] = -v;  // not all equal: slots and values move apart per element
  return t;
}

}  // namespace trib::ps::testing
