#include "trib/net/inproc_transport.h"

#include <fmt/format.h>

#include "net/inproc_connection.h"
#include "net/inproc_registry.h"
#include "net/tcp_address.h"

namespace trib::net {

class InProcListener final : public Listener {
 public:
  InProcListener(std::shared_ptr<NetContext> context, std::shared_ptr<InProcHub> hub,
                 std::string address, Handlers handlers)
      : context_(std::move(context)), hub_(std::move(hub)), address_(std::move(address)),
        handlers_(std::move(handlers)) {}

  ~InProcListener() override {
    {
      auto& registry = hub_->registry();
      std::lock_guard lock(registry.mu);
      registry.listeners.erase(address_);
    }
    std::vector<std::shared_ptr<InProcConnection>> connections;
    {
      std::lock_guard lock(mu_);
      connections.swap(connections_);
    }
    for (auto& c : connections) c->close();
  }

  std::string address() const override { return address_; }

  std::vector<std::shared_ptr<Connection>> connections() const override {
    std::lock_guard lock(mu_);
    std::vector<std::shared_ptr<Connection>> open;
    for (const auto& c : connections_) {
      if (c->is_open()) open.push_back(c);
    }
    return open;
  }

  // Called with the hub's registry lock held, so this listener cannot be destroyed meanwhile.
  std::shared_ptr<Connection> accept(const std::shared_ptr<NetContext>& client_context,
                                     Handlers client_handlers, std::uint64_t client_number) {
    PeerIdentity client = client_context->self();
    client.address = fmt::format("inproc-client-{}", client_number);
    // The same proof as the TCP handshake, minus the wire: both sides must hold one secret.
    if (!(client_context->secret() == context_->secret())) {
      for (const auto* ctx : {client_context.get(), context_.get()}) {
        ctx->stats().auth_failures++;
        ctx->stats().handshake_failures++;
      }
      context_->log(fmt::format("rejected connection from {} (claiming to be {} {}): it failed "
                                "to prove the cluster secret",
                                client.address, client.role, client.index));
      throw Unauthenticated(fmt::format("{} rejected the handshake: authentication failed "
                                        "(wrong cluster secret?)",
                                        address_));
    }
    PeerIdentity server = context_->self();
    server.address = address_;
    auto server_end = std::make_shared<InProcConnection>(context_, client, handlers_);
    auto client_end =
        std::make_shared<InProcConnection>(client_context, server, std::move(client_handlers));
    InProcConnection::connect_pair(server_end, client_end);
    std::lock_guard lock(mu_);
    std::erase_if(connections_, [](const auto& c) { return c->finished(); });
    connections_.push_back(server_end);
    return client_end;
  }

 private:
  std::shared_ptr<NetContext> context_;
  std::shared_ptr<InProcHub> hub_;
  std::string address_;
  Handlers handlers_;
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<InProcConnection>> connections_;
};

InProcHub::InProcHub() : registry_(std::make_unique<Registry>()) {}
InProcHub::~InProcHub() = default;

InProcTransport::InProcTransport(std::shared_ptr<NetContext> context,
                                 std::shared_ptr<InProcHub> hub)
    : context_(std::move(context)), hub_(std::move(hub)) {
  TRIB_CHECK(context_ != nullptr && hub_ != nullptr, InvalidArgument,
             "InProcTransport needs a NetContext and an InProcHub");
}

std::unique_ptr<Listener> InProcTransport::listen(std::string_view address, Handlers handlers) {
  HostPort wanted = parse_host_port(address, context_->options().bind_host);
  auto& registry = hub_->registry();
  std::lock_guard lock(registry.mu);
  if (wanted.port == 0) wanted.port = static_cast<std::uint16_t>(registry.next_port++);
  std::string name = wanted.to_string();
  TRIB_CHECK(!registry.listeners.contains(name), Unavailable, "{} is already in use", name);
  auto listener = std::make_unique<InProcListener>(context_, hub_, name, std::move(handlers));
  registry.listeners[name] = listener.get();
  return listener;
}

std::shared_ptr<Connection> InProcTransport::connect(std::string_view address, Handlers handlers,
                                                     ConnectOptions) {
  std::string name = parse_host_port(address, context_->options().bind_host).to_string();
  auto& registry = hub_->registry();
  std::lock_guard lock(registry.mu);
  auto it = registry.listeners.find(name);
  TRIB_CHECK(it != registry.listeners.end(), Unavailable,
             "cannot connect to {}: connection refused (nothing listens there in this process)",
             name);
  return it->second->accept(context_, std::move(handlers), registry.next_client++);
}

}  // namespace trib::net
