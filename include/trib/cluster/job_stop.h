// The coordinator's store keys through which a job stops cleanly on SIGTERM (preemption):
// whoever gets the signal (the launcher, a parameter server, a worker) sets kStopKey; the
// chief worker then picks the step every worker stops at, kStopStepKey, and writes the
// checkpoint there (src/app/cluster_stop.h holds the policy).
#pragma once

namespace trib::cluster {

inline constexpr const char* kStopKey = "job/stop";           // who asked: "ps 1: SIGTERM"
inline constexpr const char* kStopStepKey = "job/stop_step";  // decimal step, set by the chief

}  // namespace trib::cluster
