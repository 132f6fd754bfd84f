// A worker that was stopped (SIGSTOP) past its heartbeat timeout is evicted: a new generation
// starts without it, and everything it sends in its old incarnation is refused. When it is
// thawed and told so, it rejoins the job as a new member by starting itself again: the same
// program, arguments and environment, through exec, which keeps its pid (a launcher or a
// supervisor that tracks it sees the same process, and its output goes on where it went). The
// new image joins under a new incarnation exactly as a relaunched worker does: the servers'
// values (or the allreduce group's), its data from where the servers say it stood. At most
// cluster.max_restarts times per process, counted in the environment (kRejoinsEnv).
#pragma once

#include <string>

#include "trib/net/cluster_secret.h"

namespace trib::app {

inline constexpr const char* kRejoinsEnv = "TRIB_REJOINS";

struct RejoinExec {
  int max_rejoins = 3;  // cluster.max_restarts
  // --secret-fd: the descriptor was read and closed at the start, so the new image finds the
  // secret at the same number again (a pipe holding it).
  int secret_fd = -1;
  std::string secret_hex;
};

// How many times this process started itself again so far (kRejoinsEnv; 0 when unset).
int rejoins_so_far();

// Prints `why` with what happens next, then execs this program again as a new member; with
// its rejoins spent (or if exec fails) exits with code 3 instead, as an evicted member did.
[[noreturn]] void rejoin_as_new_member(const std::string& why, const RejoinExec& how);

}  // namespace trib::app
