// Test-only fault injection for what a test cannot time from outside a process: a parameter
// server lost in the middle of the chief's final checkpoint gather, a window of milliseconds.
// TRIB_TEST_FAULT=ps-lost-at-final-gather:I makes server I kill itself (SIGKILL, as kill -9)
// when the chief asks it for part 1 of its state once every worker is done, after answering
// part 0. Only the first process of index I does (a relaunched one serves normally).
//
// TRIB_TEST_FAULT=allreduce-chief-lost-at-final-checkpoint makes worker 0 of an allreduce job
// kill itself (SIGKILL) right after the run's last step's exchange, before its final
// evaluation, checkpoint and report. Only the first process (not a relaunched chief) does.
//
// Compiled in only where the tests are built (TRIB_FAULT_HOOKS, from BUILD_TESTING): the
// builds that `make train`, `make bench` and a release use ignore the variable.
#pragma once

#include <functional>
#include <string>

#include "trib/net/transport.h"
#include "trib/ps/ps_server.h"

namespace trib::app {

// The environment variable a test sets.
inline constexpr const char* kFaultVariable = "TRIB_TEST_FAULT";

// What server `index` runs before each request, or empty (the usual case). `relaunched`: a
// server of this index served before this process. Bad text in the variable fails naming it.
std::function<void(const net::Message&)> ps_fault_hook(int index, bool relaunched, const ps::PsServer& server);

// What allreduce worker `index` runs right after the run's last step's exchange, or empty (the
// usual case). `relaunched`: a chief relaunched in place. Bad text in the variable fails naming it.
std::function<void()> allreduce_fault_hook(int index, bool relaunched);

}  // namespace trib::app
