// In-process implementation of Transport, for tests that run many ranks as threads. Each
// rank has its own NetContext and InProcTransport; they meet through a shared InProcHub,
// an explicit object (not a global) that maps listen addresses to listeners.
//
// Semantics match TcpTransport: secrets are checked at connect (a mismatch is rejected and
// counted), messages larger than max_frame_bytes are refused, tensors are copied (a
// receiver never shares memory with the sender), each endpoint serves requests on its own
// receive thread, and requests honour their deadlines. There are no heartbeats: an
// in-process peer cannot vanish without its endpoint closing.
#pragma once

#include <memory>

#include "trib/net/transport.h"

namespace trib::net {

class InProcHub {
 public:
  InProcHub();
  ~InProcHub();
  InProcHub(const InProcHub&) = delete;
  InProcHub& operator=(const InProcHub&) = delete;

  struct Registry;  // the address table; defined in src/net/inproc_registry.h
  Registry& registry() { return *registry_; }

 private:
  std::unique_ptr<Registry> registry_;
};

class InProcTransport : public Transport {
 public:
  InProcTransport(std::shared_ptr<NetContext> context, std::shared_ptr<InProcHub> hub);

  // Addresses are any "name:port" strings; port 0 is replaced by a unique number.
  std::unique_ptr<Listener> listen(std::string_view address, Handlers handlers) override;
  std::shared_ptr<Connection> connect(std::string_view address, Handlers handlers = {},
                                      ConnectOptions options = {}) override;
  const std::shared_ptr<NetContext>& context() const override { return context_; }

 private:
  std::shared_ptr<NetContext> context_;
  std::shared_ptr<InProcHub> hub_;
};

}  // namespace trib::net
