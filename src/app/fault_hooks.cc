#include "app/fault_hooks.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include <nlohmann/json.hpp>

#include "ps/ps_wire.h"
#include "trib/core/error.h"

namespace trib::app {
namespace {

constexpr const char* kAllreduceChiefLostAtFinalCheckpoint = "allreduce-chief-lost-at-final-checkpoint";

}  // namespace

std::function<void(const net::Message&)> ps_fault_hook(int index, bool relaunched, const ps::PsServer& server) {
#if TRIB_FAULT_HOOKS
  const char* value = std::getenv(kFaultVariable);
  if (value == nullptr || *value == '\0') return {};
  const std::string text = value;
  const std::string prefix = "ps-lost-at-final-gather:";
  if (text == kAllreduceChiefLostAtFinalCheckpoint) return {};  // a worker's (allreduce_fault_hook)
  int target = -1;
  try {
    if (text.starts_with(prefix)) target = std::stoi(text.substr(prefix.size()));
  } catch (const std::exception&) {
  }
  TRIB_CHECK(target >= 0, InvalidArgument, "{}={}: expected ps-lost-at-final-gather:INDEX", kFaultVariable, text);
  if (target != index || relaunched) return {};
  const ps::PsServer* s = &server;
  return [s, index](const net::Message& m) {
    if (m.method != ps::proto::kPsMethod) return;
    const ps::proto::Body body = ps::proto::decode(m.body);
    if (body.type() != ps::proto::Type::save) return;
    const nlohmann::json j = nlohmann::json::parse(body.text, nullptr, false);
    if (!j.is_object() || j.value("part", -1) != 1 || s->stats().workers_training != 0) return;
    std::fprintf(stderr, "%s: ps %d is lost at the final checkpoint's gather (kill -9)\n", kFaultVariable, index);
    std::fflush(nullptr);
    ::kill(::getpid(), SIGKILL);
  };
#else
  (void)index;
  (void)relaunched;
  (void)server;
  return {};
#endif
}

std::function<void()> allreduce_fault_hook(int index, bool relaunched) {
#if TRIB_FAULT_HOOKS
  const char* value = std::getenv(kFaultVariable);
  if (value == nullptr || *value == '\0') return {};
  const std::string text = value;
  if (text.starts_with("ps-lost-at-final-gather:")) return {};  // a server's (ps_fault_hook)
  TRIB_CHECK(text == kAllreduceChiefLostAtFinalCheckpoint, InvalidArgument, "{}={}: expected {}", kFaultVariable, text,
             kAllreduceChiefLostAtFinalCheckpoint);
  if (index != 0 || relaunched) return {};
  return [] {
    std::fprintf(stderr, "%s: worker 0 is lost after the run's last exchange (kill -9)\n", kFaultVariable);
    std::fflush(nullptr);
    ::kill(::getpid(), SIGKILL);
  };
#else
  (void)index;
  (void)relaunched;
  return {};
#endif
}

}  // namespace trib::app
