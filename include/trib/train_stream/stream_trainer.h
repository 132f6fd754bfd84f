// Training a stream job (data.format: kafka): the one training loop (src/train/training_loop.h)
// over a Kafka batch source, with prequential metrics and Kafka offsets in every checkpoint.
// This library links librdkafka (through trib_stream); the general trainer (trib_train) does not.
#pragma once

#include <cstdint>
#include <vector>

#include "trib/train/trainer.h"

namespace trib::train_stream {

// Trains until training.steps, or until the stream is idle for data.kafka.idle_timeout_s.
// Checks the job, the broker and the topic before the run directory is touched.
train::RunSummary train(const train::TrainerOptions& options);

// Allreduce: whether every one of `members` of the group of `generation` has rewound its Kafka
// positions to the checkpoint the group rolled back to (StreamHooks::on_regroup), as the
// coordinator's store (`dist.lookup`) says. A relaunched worker waits for it before it asks to
// join, so that its join does not abort the group inside that rollback.
bool group_rolled_back(const train::Distribution& dist, std::int64_t generation, const std::vector<int>& members);

// Whether the chief has taken its last step (stream/chief_ending): a group re-formed since then
// waits to hand a relaunched chief the final state, and rolls back no more.
bool chief_past_last_step(const train::Distribution& dist);

// A parameter-server stream job whose partitions the job assigns (data.kafka.assignment): its
// lost chief, relaunched, rejoins the running job in place as a lost worker does (the servers'
// state, its share at its last applied push), instead of the job restarting whole.
bool ps_chief_rejoins(const config::JobConfig& job);

// An allreduce stream job whose partitions the job assigns, with cluster.stream_rejoin: its lost
// chief, relaunched, joins the running group as a relaunched worker does (the survivors go on
// without it meanwhile, the lowest one leading), instead of the job restarting whole.
bool allreduce_chief_rejoins(const config::JobConfig& job);

// Either of the above: a lost chief of this stream job is taken back in place.
bool chief_rejoins(const config::JobConfig& job);

}  // namespace trib::train_stream
