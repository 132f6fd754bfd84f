// The address table behind an InProcHub: which in-process listener serves which address.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

#include "trib/net/inproc_transport.h"

namespace trib::net {

class InProcListener;

struct InProcHub::Registry {
  std::mutex mu;  // also held while a listener accepts, so it cannot vanish meanwhile
  std::unordered_map<std::string, InProcListener*> listeners;
  std::uint64_t next_port = 1;
  std::uint64_t next_client = 1;
};

}  // namespace trib::net
