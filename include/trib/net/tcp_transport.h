// TCP implementation of Transport: framed, authenticated (HMAC handshake, sequence
// numbers) and encrypted (AES-256-GCM; or only MAC'd when NetOptions::encryption is off),
// with heartbeats and pre-authentication limits. Wire format: docs/wire_protocol.md.
#pragma once

#include <memory>

#include "trib/net/transport.h"

namespace trib::net {

class TcpTransport : public Transport {
 public:
  explicit TcpTransport(std::shared_ptr<NetContext> context);

  std::unique_ptr<Listener> listen(std::string_view address, Handlers handlers) override;
  std::shared_ptr<Connection> connect(std::string_view address, Handlers handlers = {},
                                      ConnectOptions options = {}) override;
  const std::shared_ptr<NetContext>& context() const override { return context_; }

 private:
  std::shared_ptr<NetContext> context_;
};

}  // namespace trib::net
