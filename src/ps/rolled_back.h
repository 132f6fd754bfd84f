// Thrown on a parameter-server worker when a server answers kFlagRolledBack: the job rolled
// back past this worker's generation (or the server was relaunched and holds no state yet).
// PsUpdate catches it, with a lost connection (Unavailable), and rewinds (ps_recovery.h).
#pragma once

#include "trib/core/error.h"

namespace trib::ps {

class RolledBack : public Error {
 public:
  using Error::Error;
};

// A request failed because a server was lost (its connection closed) or the job rolled back.
inline bool server_lost(const std::exception& e) {
  return dynamic_cast<const Unavailable*>(&e) != nullptr || dynamic_cast<const RolledBack*>(&e) != nullptr;
}

}  // namespace trib::ps
