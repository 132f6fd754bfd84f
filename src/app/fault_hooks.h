// Test-only fault injection for what a test cannot time from outside a process: a parameter
// server lost in the middle of the chief's final checkpoint gather, a window of milliseconds;
// a relaunched server whose copy of a shard does not arrive before the shard's second loss.
// TRIB_TEST_FAULT=ps-lost-at-final-gather:I makes server I kill itself (SIGKILL, as kill -9)
// when the chief asks it for part 1 of its state once every worker is done, after answering
// part 0. Only the first process of index I does (a relaunched one serves normally).
// TRIB_TEST_FAULT=ps-copy-held:I (strategy.ps_replicas: 1): a relaunched server I does not take
// the first copy of each shard it backs up: it holds that snapshot frame 30 s, printing a line
// when it arrives, and refuses it (a second loss of the shard within that window finds no copy
// of it anywhere). A later copy (from a new primary) is taken as usual.
//
// TRIB_TEST_FAULT=allreduce-chief-lost-at-final-checkpoint makes worker 0 of an allreduce job
// kill itself (SIGKILL) right after the run's last step's exchange, before its final
// evaluation, checkpoint and report. Only the first process (not a relaunched chief) does;
// with `:N` (allreduce-chief-lost-at-final-checkpoint:2) the first N processes of worker 0 do,
// the first and N-1 relaunched ones (membership_key::kChiefRelaunched counts them).
// TRIB_TEST_FAULT=allreduce-chief-slow-at-final-checkpoint:S holds worker 0 there S seconds
// instead: a chief alive but slow to end (its heartbeats go on). A signal from the test cannot
// time this window: the final evaluation takes milliseconds.
// TRIB_TEST_FAULT=allreduce-worker-lost-at-step:W:S makes allreduce worker W (W > 0) kill
// itself (SIGKILL) once its step S is applied (its record of applied ids has the line), in the
// middle of a run; only its first process (a relaunched one, which joins, trains on).
//
// Compiled in only where the tests are built (TRIB_FAULT_HOOKS, from BUILD_TESTING): the
// builds that `make train`, `make bench` and a release use ignore the variable.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "trib/net/transport.h"
#include "trib/ps/ps_server.h"

namespace trib::app {

// The environment variable a test sets.
inline constexpr const char* kFaultVariable = "TRIB_TEST_FAULT";

// Fails naming the variable if its text is not one of the faults above (a process checks it
// before it joins the job: a member lost first would end the job before the line is printed).
void check_fault_variable();

// What server `index` runs before each request, or empty (the usual case). `relaunched`: a
// server of this index served before this process. Bad text in the variable fails naming it.
std::function<void(const net::Message&)> ps_fault_hook(int index, bool relaunched, const ps::PsServer& server);
// What server `index`'s backup of `shard` runs before each frame or request, or empty.
std::function<void(const net::Message&)> backup_fault_hook(int index, bool relaunched, int shard);

// What allreduce worker `index` runs right after the run's last step's exchange, or empty (the
// usual case). `chief_relaunches`: how many processes of worker 0 came before this one (0: the
// first; more: a chief relaunched in place). Bad text in the variable fails naming it.
std::function<void()> allreduce_fault_hook(int index, int chief_relaunches);

// What allreduce worker `index` runs after each applied step (TrainerOptions::on_step), or
// empty. `joining`: a relaunched process, which joins the running group.
std::function<void(std::int64_t step, double loss)> allreduce_step_fault_hook(int index, bool joining);

}  // namespace trib::app
