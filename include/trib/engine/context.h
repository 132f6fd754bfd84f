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
};

class EngineContext {
 public:
  explicit EngineContext(EngineOptions options = {});
  ~EngineContext();
  EngineContext(const EngineContext&) = delete;
  EngineContext& operator=(const EngineContext&) = delete;

  int intra_op_threads() const { return intra_; }
  int inter_op_threads() const { return inter_; }
  // Null when inter_op_threads is 1: nodes then run inline on the calling thread.
  ThreadPool* inter_op_pool() const { return pool_.get(); }
  const dnnl::engine& dnnl_engine() const;
  // Layout conversions, built once and shared by every kernel run on this context.
  kernels::ReorderCache& reorder_cache() const { return *reorders_; }

 private:
  int intra_;
  int inter_;
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<dnnl::engine> dnnl_;
  std::unique_ptr<kernels::ReorderCache> reorders_;
};

}  // namespace trib
