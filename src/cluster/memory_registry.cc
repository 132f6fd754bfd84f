#include "trib/cluster/memory_registry.h"

#include "trib/core/error.h"

namespace trib::cluster {

namespace {

class MemoryRegistration final : public Registration {
 public:
  MemoryRegistration(std::shared_ptr<MemoryRegistry::State> state, std::string name, std::uint64_t serial)
      : state_(std::move(state)), name_(std::move(name)), serial_(serial) {}

  ~MemoryRegistration() override {
    {
      std::lock_guard lock(state_->mu);
      if (!alive_locked()) return;
      state_->entries.erase(name_);
      state_->roster.members.erase(name_);
      ++state_->roster.generation;
    }
    state_->changed.notify_all();
  }

  bool alive() const override {
    std::lock_guard lock(state_->mu);
    return alive_locked();
  }

 private:
  bool alive_locked() const {
    auto it = state_->entries.find(name_);
    return it != state_->entries.end() && it->second == serial_;
  }

  std::shared_ptr<MemoryRegistry::State> state_;
  std::string name_;
  std::uint64_t serial_;
};

}  // namespace

MemoryRegistry::MemoryRegistry() : state_(std::make_shared<State>()) {}

std::unique_ptr<Registration> MemoryRegistry::enter(const std::string& name, const std::string& value, Millis ttl) {
  TRIB_CHECK(!name.empty(), InvalidArgument, "registry: a member needs a name");
  TRIB_CHECK(ttl.count() > 0, InvalidArgument, "registry: member '{}' needs a positive TTL, got {} ms", name,
             ttl.count());
  std::uint64_t serial;
  {
    std::lock_guard lock(state_->mu);
    TRIB_CHECK(!state_->entries.contains(name), InvalidArgument, "registry: member '{}' is already registered",
               name);
    serial = state_->next_serial++;
    state_->entries[name] = serial;
    state_->roster.members[name] = value;
    ++state_->roster.generation;
  }
  state_->changed.notify_all();
  return std::make_unique<MemoryRegistration>(state_, name, serial);
}

void MemoryRegistry::evict(const std::string& name) {
  {
    std::lock_guard lock(state_->mu);
    if (state_->entries.erase(name) == 0) return;
    state_->roster.members.erase(name);
    ++state_->roster.generation;
  }
  state_->changed.notify_all();
}

void MemoryRegistry::advance_to(std::int64_t generation) {
  {
    std::lock_guard lock(state_->mu);
    if (generation <= state_->roster.generation) return;
    state_->roster.generation = generation;
  }
  state_->changed.notify_all();
}

Roster MemoryRegistry::roster() {
  std::lock_guard lock(state_->mu);
  return state_->roster;
}

Roster MemoryRegistry::wait_for_change(std::int64_t seen, std::chrono::steady_clock::time_point until) {
  std::unique_lock lock(state_->mu);
  state_->changed.wait_until(lock, until, [&] { return state_->roster.generation > seen; });
  return state_->roster;
}

}  // namespace trib::cluster
