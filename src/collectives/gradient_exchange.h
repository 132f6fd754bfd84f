// One training step's gradients in, their averages over the group out, with the
// collectives on a communication thread of its own: a bucket's allreduce starts the moment
// its last gradient is reported, while the caller's backprop goes on. The thread runs the
// buckets in plan order whatever order they fill in, so every worker issues the same
// collectives in the same order. With `share_bytes` each step also allgathers a few bytes per
// worker (the allreduce strategy's data cursors), first, as soon as they are given: that
// collective overlaps the step's forward and backward pass, and finish() waits for it too.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collectives/gradient_buckets.h"
#include "trib/collectives/allreduce.h"
#include "trib/collectives/group.h"

namespace trib::collectives {

class GradientExchange {
 public:
  // `max_shared_bytes`: with share_bytes, the most one worker may share (allgather_bytes).
  GradientExchange(std::shared_ptr<Group> group, std::size_t bucket_bytes, Compression compression,
                   bool share_bytes = false, std::size_t max_shared_bytes = 0);
  // Stops the thread; if a collective is in progress, the group is aborted so it ends now.
  ~GradientExchange();
  GradientExchange(const GradientExchange&) = delete;
  GradientExchange& operator=(const GradientExchange&) = delete;

  // Copies gradient `index` of the current step into its bucket. Thread-safe. Before the
  // first finish() (which makes the plan) reports are ignored: that step is exchanged then.
  void report(std::size_t index, const update::GradTensor& grad);
  // Reports what was not reported, waits for every exchange of the step, and replaces
  // `grads` by the averages (dense ones as views of the buckets, valid until the next
  // step). Rethrows a collective's error (and again on every later call).
  void finish(std::vector<update::GradTensor>& grads);
  // With share_bytes: this worker's bytes of the current step, allgathered at once (before the
  // step's gradients). A step finished without them shares empty bytes.
  void share(std::string bytes);
  // After finish(): every worker's bytes of the step just finished, in rank order.
  const std::vector<std::string>& shared() const { return shared_out_; }

  struct Stats {
    std::uint64_t steps = 0;
    int buckets = 0, sparse = 0;
    std::uint64_t dense_bytes = 0;       // per step
    double waited_seconds = 0;           // in finish(), summed over steps
    std::uint64_t items = 0, early = 0;  // exchanges, and those ready before finish() began
    // Where a step's time goes (docs/scaling.md reads them): the collectives' time per item
    // (buckets in plan order, then sparse ones), and how much of all of it ran before
    // finish() began, i.e. hidden behind the forward and backward pass. Summed over steps.
    std::vector<double> item_seconds;
    double comm_seconds = 0, hidden_seconds = 0;
  };
  Stats stats() const;

 private:
  int items() const { return plan_.buckets() + static_cast<int>(plan_.sparse().size()); }
  void start(const std::vector<update::GradTensor>& grads);
  void comm_main();
  void run_item(int item);
  void share_locked(std::string bytes);  // share(), with mu_ held
  // On the thread: waits until `ready` (called with mu_ held), runs `op` (busy), then `done`
  // (with mu_ held) with how long `op` took. False when stopping, or when `op` failed (its
  // error kept for finish()).
  bool run_when(const std::function<bool()>& ready, const std::function<void()>& op,
                const std::function<void(double seconds)>& done);
  using Clock = std::chrono::steady_clock;

  std::shared_ptr<Group> group_;
  std::size_t bucket_bytes_;
  Compression compression_;
  bool share_bytes_;
  std::size_t max_shared_bytes_;
  std::size_t shared_slot_ = 1024;  // allgather_bytes's slot: the same on every worker of the group
  std::string shared_in_;
  std::vector<std::string> shared_out_;
  std::uint64_t shared_ready_ = 0, shared_done_ = 0;  // the step whose bytes were given, exchanged
  BucketPlan plan_;
  bool started_ = false;  // start() made the plan (empty where there are no parameters)
  std::vector<Tensor> buckets_;                   // f32 [elements], one per bucket
  std::vector<int> sparse_item_;                  // per parameter: its sparse item, or -1
  std::vector<update::GradTensor> sparse_in_, sparse_out_;  // per sparse item

  mutable std::mutex mu_;
  std::condition_variable cv_;
  Stats stats_;
  std::uint64_t step_ = 1;           // the step being gathered (the thread's count agrees)
  std::vector<bool> reported_;       // per parameter, this step
  std::vector<int> pending_;         // per bucket: gradients still to come this step
  std::vector<std::uint64_t> ready_;  // per item: the step in which it became ready
  std::vector<std::uint64_t> done_;   // per item: the step in which it was exchanged
  std::exception_ptr error_;
  bool stopping_ = false;
  bool busy_ = false;  // the thread is inside a collective
  Clock::time_point op_began_;    // when the collective in progress began (while busy_)
  double step_comm_seconds_ = 0;  // collectives finished during the current step
  std::thread thread_;
};

}  // namespace trib::collectives
