// How the workers of a stream job agree on the Kafka offsets a checkpoint holds.
//
// Design: the coordinator's key-value store (Distribution::publish/lookup) carries each
// worker's offsets to the chief; checkpoints are a barrier. At checkpoint step s every worker,
// once its step-s update is applied (with parameter servers: acknowledged by the servers),
// publishes its offsets under stream/pos/<s>/<worker> and waits for stream/ckpt/<s>. The
// chief merges them (partitions are disjoint: stream::merge_claims), saves and publishes the
// checkpoint, then sets stream/ckpt/<s>. Nobody trains while the chief saves, so the saved
// parameters hold exactly the updates of the records before the saved offsets.
//
// Ends: a worker that stops (training.steps reached, or its stream idle) publishes
// stream/final/<worker>. The chief, as soon as it takes no more steps (before its strategy
// waits for the other workers to finish), sets stream/chief_ending: workers then skip later
// barriers, since no checkpoint is coming for them. It then waits for every final and writes
// the last checkpoint with the final offsets.
//
// At the start the chief publishes stream/start: the offsets to restore (from its
// checkpoint, possibly none) and the run id that tags this incarnation's Kafka commits.
#pragma once

#include <chrono>
#include <functional>
#include <cstdint>
#include <string>

#include "trib/data/data_position.h"
#include "trib/train/distribution.h"

namespace trib::train_stream {

struct StreamStart {
  std::string run_id;
  data::DataPosition offsets;  // Kafka fields only; empty: no checkpoint
};

class StreamSync {
 public:
  // One worker: every call is immediate (nothing to agree on).
  explicit StreamSync(const train::Distribution& dist, std::chrono::milliseconds timeout = std::chrono::minutes(10));

  // Chief: publishes `start` and returns it; others: wait for the chief's.
  StreamStart start(const StreamStart& chief_start);

  // Before the first step, every worker owns partitions: a rebalance that moves partitions
  // to a late joiner needs every member to poll, which a worker waiting on its peers (sync
  // PS, allreduce) does not. Calls `service` (a short poll) until `owns_partitions` has held
  // here and every other worker has said so too; Timeout after `limit`, naming the worker.
  void await_assignment(const std::function<bool()>& owns_partitions, const std::function<void()>& service,
                        std::chrono::milliseconds limit, const std::string& topic);

  // Non-chief at checkpoint step s: hands over `offsets`, then waits until the chief has
  // published the checkpoint. Returns true if it did (the caller may then commit to Kafka),
  // false if the chief is ending and no checkpoint comes.
  bool offer(std::int64_t step, const data::DataPosition& offsets);
  // Chief at checkpoint step s: its own offsets merged with every other worker's (their
  // step-s offers, or their finals when they have stopped).
  data::DataPosition gather(std::int64_t step, const data::DataPosition& own);
  // Chief, after publishing checkpoint s.
  void published(std::int64_t step);

  // Non-chief at its end: hands over its final offsets and waits for the last checkpoint.
  // Returns true once it is published (the caller may then commit to Kafka).
  bool final_offsets(const data::DataPosition& offsets);
  // Chief, once it takes no more steps: no periodic checkpoint comes any more (offer returns
  // false from here on). Idempotent.
  void ending();
  // Chief at its end, after ending(): every worker's final offsets merged with its own.
  data::DataPosition gather_final(const data::DataPosition& own);
  // Chief, after publishing the last checkpoint.
  void published_final();

 private:
  std::string wait_any(const std::vector<std::string>& keys, std::string* which);

  const train::Distribution& dist_;
  std::chrono::milliseconds timeout_;
};

// The stream fields of a position (stream::is_stream_field: Kafka progress and counts; a
// shuffle buffer's own fields cannot be merged).
data::DataPosition kafka_fields(const data::DataPosition& position);

}  // namespace trib::train_stream
