// How a transport's handlers reach the object that owns a connection or listener, when that
// object may be destroyed while one of them runs. A handler runs on the connection's threads,
// and one can still be running, or start, after its owner closed and released the connection:
// the connection's executor holds the connection while it serves a message, so releasing the
// last reference the owner has does not wait for it. Handlers capture the gate, never the
// owner's this; the owner shuts the gate first when it closes: shut() waits for a handler
// inside, and none enters after.
//
//   h.on_request = [gate = gate_](net::Message m, const net::PeerIdentity&) {
//     if (auto owner = gate->enter()) owner->deliver(m);
//     return net::Message{};
//   };
//
// Never shut a gate from inside one of its handlers (that waits for itself).
#pragma once

#include <memory>
#include <shared_mutex>

namespace trib::net {

template <class Owner>
class HandlerGate {
 public:
  explicit HandlerGate(Owner* owner) : owner_(owner) {}

  // Inside the gate while it lives: the owner, or false once the gate is shut.
  class Pass {
   public:
    explicit operator bool() const { return owner_ != nullptr; }
    Owner* operator->() const { return owner_; }

   private:
    friend class HandlerGate;
    Pass(std::shared_mutex& mu, Owner* const& owner) : lock_(mu), owner_(owner) {}
    std::shared_lock<std::shared_mutex> lock_;  // first: owner_ is read under it
    Owner* owner_;
  };

  // Several handlers (a connection's executor and its receive thread, other connections) may
  // be inside at once.
  Pass enter() { return Pass(mu_, owner_); }

  // Waits for every handler inside; none reaches the owner after. Idempotent.
  void shut() {
    std::unique_lock lock(mu_);
    owner_ = nullptr;
  }

 private:
  std::shared_mutex mu_;
  Owner* owner_;
};

template <class Owner>
std::shared_ptr<HandlerGate<Owner>> open_handler_gate(Owner* owner) {
  return std::make_shared<HandlerGate<Owner>>(owner);
}

}  // namespace trib::net
