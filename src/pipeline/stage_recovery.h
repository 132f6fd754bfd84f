// How the stages of a pipeline go on when one of them is lost and relaunched alone (a
// replica-less pipeline; docs/fault_tolerance/allreduce_pipeline.md, "Pipeline: a lost stage").
//
// The stages meet in numbered rounds through the coordinator's store. Round 0 is the run's
// start. A stage's process marks itself started; a process that finds its stage already
// marked is a relaunch, and opens the next round. A survivor that loses a neighbour drops its
// links (so that its other neighbour notices too, and the loss reaches every stage), drops
// its in-flight micro-batches, and waits for that round. In a round every stage links up
// again (addresses under the round's keys), the chief (stage 0) names the checkpoint the
// round starts from, the newest complete one, and every stage reloads its shard of it (stage
// 0 also rewinds its data to the checkpoint's position): the survivors roll back in place to
// the step the relaunched stage restores.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "trib/checkpoint/checkpoint.h"
#include "trib/pipeline/stage_trainer.h"

namespace trib::pipeline {

// Marks this stage's process as started; true when one had started before: this is a relaunch.
bool mark_started(const StageTrainerOptions& o);

// A relaunched stage opens the round after the newest and returns it.
std::int64_t open_next_round(const StageTrainerOptions& o);

// A survivor in round `current` waits, up to its links' timeout, for a relaunched stage to
// open a later round, and returns it. Throws Unavailable with `lost` (the neighbour's loss)
// and what it waited for when none comes.
std::int64_t await_next_round(const StageTrainerOptions& o, std::int64_t current, const std::string& lost);

// The checkpoint round `round` (>= 1) starts from: the chief takes the newest complete one
// under `root` and publishes its step (0: none yet, every stage starts from its initial
// values); the other stages wait for that step and load the same checkpoint.
std::optional<Checkpoint> rollback_checkpoint(const StageTrainerOptions& o, std::int64_t round,
                                              const std::filesystem::path& root);

}  // namespace trib::pipeline
