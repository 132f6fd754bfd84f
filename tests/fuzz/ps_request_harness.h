// One fuzz input through a parameter server, shared by ps_request_fuzz and the unit test
// that replays the seeds in corpus_ps_request. Byte 0 chooses a server (its mode, and whether
// it holds whole variables or a row range of the embedding), bytes 1-2 the element count of
// the f32 tensor sent along (0xffff: none), the rest is the request body. The input must be
// served, or refused with InvalidArgument; a served request's reply must decode as a reply.
// Anything else aborts. Checkpoint requests (restore, save) are fuzzed too: they travel as
// tensors and JSON over the connection and touch no file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "ps/ps_wire.h"
#include "trib/optim/optimizer_config.h"
#include "trib/ps/ps_server.h"

namespace trib::ps::fuzz {

enum class Outcome { served, refused, skipped };

inline std::vector<VariableInfo> variables() { return {{"w", Shape{4}}, {"emb", Shape{6, 2}}, {"b", Shape{}}}; }

// servers[mode * 2 + index], modes sync, async, bounded, averaging. Server 0 holds w and
// rows 0-2 of emb (10 values); server 1 rows 3-5 of emb and b (7 values).
inline std::vector<std::unique_ptr<PsServer>> make_servers() {
  std::vector<std::unique_ptr<PsServer>> out;
  const Placement placement = place(variables(), 2, PlacementStrategy::partitioned, 24);
  for (Mode mode : {Mode::sync, Mode::async, Mode::bounded, Mode::averaging})
    for (int index = 0; index < 2; ++index)
      out.push_back(std::make_unique<PsServer>(
          PsServerOptions{index, 2, mode, 1, 0, variables(), placement, make_optimizer({.name = "adam"})}));
  return out;
}

inline void require(bool ok) {
  if (!ok) std::abort();
}

inline Outcome serve_request(const std::uint8_t* data, std::size_t size) {
  static const std::vector<std::unique_ptr<PsServer>> servers = make_servers();
  if (size < 3) return Outcome::skipped;
  PsServer& server = *servers[data[0] % servers.size()];
  const std::size_t elements = data[1] | (std::size_t{data[2]} << 8);
  net::Message m;
  m.method = proto::kPsMethod;
  if (elements != 0xffff) m.tensor = Tensor::full(Shape{static_cast<std::int64_t>(elements % 512)}, 0.5f);
  m.body.assign(reinterpret_cast<const char*>(data + 3), size - 3);
  if (m.body.size() >= 36) m.body.replace(32, 4, 4, '\0');  // a pull must not wait for steps that never come
  try {
    net::Message reply = server.handle(std::move(m), net::PeerIdentity{"worker", 0, "fuzz"});
    require(reply.method == proto::kPsMethod);
    require((proto::decode(reply.body).header.flags & proto::kFlagReply) != 0);
    return Outcome::served;
  } catch (const InvalidArgument&) {
    return Outcome::refused;  // the expected outcome for most inputs
  }
}

}  // namespace trib::ps::fuzz
