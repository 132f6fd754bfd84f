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
//
// TRIB_TEST_FAULT=allreduce-stream-slow-in-rewind:S holds every worker of an allreduce stream
// job S seconds inside its first rollback after a lost worker (the group re-formed, its state
// taken, before the Kafka rewind and its rendezvous), printing a line: a
// test kills a second worker there. allreduce-stream-slow-after-last-step:S holds every worker
// S seconds after the run's last step, before it hands over its final Kafka offsets (a worker
// killed there is lost after its last exchange). allreduce-stream-slow-after-rewind:S holds
// every worker S seconds right after its first rollback from the members' cursors (rewound,
// the group's rendezvous passed, before its next step): a relaunched worker then joins before
// the survivors of a loss finish a step. Once per process each.
// allreduce-stream-end-chief-join-held:S holds every worker as allreduce-stream-slow-after-last-step
// does, and a relaunched worker 0 asks to join only once the file test-release-chief-join exists
// in the run directory: the test loses a second worker while the chief is away at the run's end.
// TRIB_TEST_FAULT=allreduce-stream-held-before-broadcast:W holds worker W alone 30 s inside its
// first rollback, just before the broadcast of the checkpoint's state (UpdateStrategy::start in
// StreamHooks::on_regroup), printing a line: the other members are then inside that broadcast,
// waiting for W, and a test kills W there. Once per process. Only a rollback to the checkpoint
// has that broadcast (data.kafka.share_cursors: false, or the members' cursors not known).
// TRIB_TEST_FAULT=allreduce-stream-held-in-rollback:W:N holds worker W 30 s inside its N-th
// rollback (the group re-formed and its state taken, before its Kafka rewind and rendezvous),
// printing a line: with N = 2, worker 1 of a job whose worker 2 was lost and relaunched is held
// in the join's rollback (its first was the loss's), and a test kills it there. Counted per
// process.
// TRIB_TEST_FAULT=allreduce-stream-join-after-checkpoint:S makes a relaunched worker of an
// allreduce stream job wait, before it asks to join the running group, until the run directory
// holds checkpoint S or a later one (a test's joiner then finds checkpoints the survivors wrote
// without it). TRIB_TEST_FAULT=allreduce-stream-join-after-step:S likewise, until another
// worker's id record (data.kafka.record_ids: worker 1's for a relaunched chief, worker 0's for
// the others) has a line for step S (a test's relaunched chief then joins only once the
// survivors have passed a checkpoint step without it).
//
// TRIB_TEST_FAULT=stream-worker-lost-at-step:W:S makes worker W of a stream job kill itself
// (SIGKILL) once its step S is applied and recorded (data.kafka.record_ids), at the fault point
// kStreamStepApplied ("stream-step-applied:S"). A relaunched process never applies step S
// again (it resumes past it), so only the first one does.
// TRIB_TEST_FAULT=stream-worker-lost-after-rewind:W makes worker W of a parameter-server stream
// job kill itself (SIGKILL) right after it rewinds its Kafka positions in place to a restored
// checkpoint (fault point kStreamRewound), before its next push: its servers then hold no
// cursor for it. A relaunched process does not rewind again.
// TRIB_TEST_FAULT=stream-worker-leaves-at-step:W:S makes worker W of a stream job send itself
// SIGTERM once its step S is applied and recorded (kStreamStepApplied): a non-chief
// parameter-server worker then leaves the job at that step boundary, as `trib scale` down
// makes it, at a step the test knows.
//
// TRIB_TEST_FAULT=stream-worker-lost-before-hand-back:W makes worker W of a parameter-server
// stream job kill itself (SIGKILL) at the step boundary where it would first hand a returning
// worker's share back (`trib scale` up after a departure), before it does: the returning
// worker then waits for W's relaunch to hand it over. Only the first process does (it leaves a
// mark in the run directory).
//
// TRIB_TEST_FAULT=stream-worker-lost-between-pushes:W:S makes worker W of a parameter-server
// job with several servers kill itself (SIGKILL) once its push of step S to server 0 is
// answered, its pushes of that step to the other servers held back: a worker lost between its
// pushes. Only the first process does (it leaves a mark in the run directory).
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
// The fault point a stream worker names after each applied step: "<this>:<step>".
inline constexpr const char* kStreamStepApplied = "stream-step-applied";
// The fault point a stream worker names once it has rewound in place to a restored checkpoint.
inline constexpr const char* kStreamRewound = "stream-rewound";
// The fault point a parameter-server stream worker names at a step boundary just before it
// hands a returning worker's share back (stream_departures.cc).
inline constexpr const char* kStreamBeforeHandBack = "stream-before-hand-back";

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

// Worker `index`'s train::Distribution::fault_point for the stream faults above, or empty.
std::function<void(const std::string&)> stream_fault_point(int index, const std::string& run_dir);

// Worker `index`'s ps::PsUpdateOptions::on_exchange for the fault between pushes above (run
// `run_dir`), or empty.
std::function<void(const char*, int, std::int64_t)> ps_push_fault_hook(int index, const std::string& run_dir);

// What a joining worker `index` of an allreduce stream job runs before it asks to join (the
// join fault above, reading `run_dir`'s checkpoints), or empty.
std::function<void()> stream_join_fault_hook(int index, const std::string& run_dir);

}  // namespace trib::app
