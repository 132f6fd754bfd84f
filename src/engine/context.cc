#include "trib/engine/context.h"

#include <dnnl.hpp>

#include "engine/kernels/memory_layout.h"

namespace trib {

EngineContext::EngineContext(EngineOptions options)
    : intra_(options.intra_op_threads > 0 ? options.intra_op_threads : hardware_threads()),
      inter_(options.inter_op_threads > 0 ? options.inter_op_threads : hardware_threads()),
      parallel_min_us_(options.parallel_node_min_us),
      dnnl_(std::make_unique<dnnl::engine>(dnnl::engine::kind::cpu, 0)),
      reorders_(std::make_unique<kernels::ReorderCache>()) {
  if (inter_ > 1) pool_ = std::make_unique<ThreadPool>(inter_);
}

EngineContext::~EngineContext() = default;

const dnnl::engine& EngineContext::dnnl_engine() const { return *dnnl_; }

}  // namespace trib
