// The engine's explicit context: thread pools and the oneDNN engine, created once per process
// (or once per simulated rank in tests) and passed down. Nothing in Tributary is global.
#pragma once

#include <memory>

#include "trib/core/thread_pool.h"

namespace dnnl {
struct engine;
}

namespace trib::kernels {
class ReorderCache;
}

namespace trib {

struct EngineOptions {
  // Threads one kernel may use (oneDNN/OpenMP); <= 0 means one per core.
  int intra_op_threads = 0;
  // Graph nodes that may run at once; <= 0 means one per core.
  int inter_op_threads = 0;
  // A node whose kernel is estimated to take less than this on one thread (Op::cost_ns)
  // runs on one thread: waking a second would cost more than it saves. 0 gives every node
  // intra_op_threads. Why 200: an OpenMP parallel region with sleeping workers costs about
  // 10 us to wake and join on an idle machine, a oneDNN primitive runs one to three, and the
  // data must move to the other core's cache. Measured on a 2-core machine, the MLP's
  // 256 x 256 layers (170 us) ran no faster on two threads, and with every node on two
  // threads its step at batch 64 was twice as slow; convolutions (ms) gained 1.5-1.8x.
  double parallel_node_min_us = 200;
};

// OpenMP's worker threads wait for work by spinning unless told otherwise, and on a small
// or shared machine a spinning worker takes the core its partner needs: a 2-thread MLP step
// ran 50x slower. libgomp reads OMP_WAIT_POLICY once, while the program loads, so a
// program's main calls this first thing: when the variable is unset it sets it to passive
// and runs the program again (execv of /proc/self/exe with the same argv). Returns true when
// a policy is in effect (set by the user or by the re-run), false if the re-run failed.
bool use_passive_openmp_waits(char** argv);

class EngineContext {
 public:
  explicit EngineContext(EngineOptions options = {});
  ~EngineContext();
  EngineContext(const EngineContext&) = delete;
  EngineContext& operator=(const EngineContext&) = delete;

  int intra_op_threads() const { return intra_; }
  int inter_op_threads() const { return inter_; }
  double parallel_node_min_us() const { return parallel_min_us_; }
  // Null when inter_op_threads is 1: nodes then run inline on the calling thread.
  ThreadPool* inter_op_pool() const { return pool_.get(); }
  const dnnl::engine& dnnl_engine() const;
  // Layout conversions, built once and shared by every kernel run on this context.
  kernels::ReorderCache& reorder_cache() const { return *reorders_; }

 private:
  int intra_;
  int inter_;
  double parallel_min_us_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<dnnl::engine> dnnl_;
  std::unique_ptr<kernels::ReorderCache> reorders_;
};

}  // namespace trib
