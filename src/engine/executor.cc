#include "trib/engine/executor.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>

#include "engine/ops/source_ops.h"
#include "trib/engine/op.h"

namespace trib {

// ---- VariableStore ----

void VariableStore::set(const std::string& name, Tensor value) { vars_[name] = std::move(value); }

Tensor& VariableStore::get(const std::string& name) {
  auto it = vars_.find(name);
  TRIB_CHECK(it != vars_.end(), NotFound, "variable '{}' has no value in the variable store", name);
  return it->second;
}

const Tensor& VariableStore::get(const std::string& name) const {
  return const_cast<VariableStore*>(this)->get(name);
}

std::vector<std::string> VariableStore::names() const {
  std::vector<std::string> out;
  out.reserve(vars_.size());
  for (const auto& [k, v] : vars_) out.push_back(k);
  std::sort(out.begin(), out.end());
  return out;
}

// ---- Executor ----

struct Executor::RunState {
  std::span<const Feed> feeds;
  VariableStore* variables = nullptr;
  const RunOptions* options = nullptr;
  std::vector<std::vector<Tensor>> values;                // per node, per output
  std::vector<std::unique_ptr<std::atomic<int>[]>> readers;  // per node, per output
  std::vector<std::atomic<int>> pending;                  // per node: producers not yet done
  std::vector<const Tensor*> feed_for;                    // per node (placeholders)
  std::mutex mu;
  std::condition_variable done_cv;
  std::size_t done = 0;
  std::size_t submitted = 0;
  std::exception_ptr error;
  std::atomic<bool> failed{false};
};

Executor::Executor(const Graph& graph, std::vector<Value> fetches, const EngineContext& engine)
    : graph_(graph), fetches_(std::move(fetches)), engine_(engine),
      pool_(std::make_shared<PoolAllocator>()) {
  const std::size_t n = graph_.size();
  std::vector<bool> needed(n, false);
  for (const Value& f : fetches_) {
    graph_.spec(f);  // validates the fetch
    needed[f.node] = true;
  }
  // Ids are topological, so one reverse sweep marks everything the fetches depend on.
  for (NodeId id = static_cast<NodeId>(n) - 1; id >= 0; --id) {
    if (!needed[id]) continue;
    for (const Value& in : graph_.node(id).inputs) needed[in.node] = true;
  }
  consumers_.resize(n);
  pending_inputs_.assign(n, 0);
  for (NodeId id = 0; id < static_cast<NodeId>(n); ++id) {
    if (!needed[id]) continue;
    order_.push_back(id);
    std::vector<NodeId> producers;
    for (const Value& in : graph_.node(id).inputs) producers.push_back(in.node);
    std::sort(producers.begin(), producers.end());
    producers.erase(std::unique(producers.begin(), producers.end()), producers.end());
    pending_inputs_[id] = static_cast<int>(producers.size());
    for (NodeId p : producers) consumers_[p].push_back(id);
  }
}

Executor::~Executor() = default;

std::vector<Tensor> Executor::run(std::span<const Feed> feeds, VariableStore& variables,
                                  const RunOptions& options) {
  const std::size_t n = graph_.size();
  RunState st;
  st.feeds = feeds;
  st.variables = &variables;
  st.options = &options;
  st.values.resize(n);
  st.readers.resize(n);
  st.pending = std::vector<std::atomic<int>>(n);
  st.feed_for.assign(n, nullptr);

  for (const Feed& f : feeds) {
    const Node& node = graph_.node(f.placeholder.node);
    TRIB_CHECK(node.op->kind() == Op::Kind::placeholder, InvalidArgument,
               "feed for {} which is not a placeholder", graph_.describe(f.placeholder));
    const TensorSpec& want = node.outputs[0];
    TRIB_CHECK(f.value.defined() && f.value.dtype() == want.dtype && f.value.shape() == want.shape,
               InvalidArgument, "placeholder '{}' expects {} but was fed {}", node.name,
               want.to_string(), f.value.spec_string());
    st.feed_for[node.id] = &f.value;
  }
  for (NodeId id : order_) {
    const Node& node = graph_.node(id);
    TRIB_CHECK(node.op->kind() != Op::Kind::placeholder || st.feed_for[id] != nullptr,
               InvalidArgument, "placeholder '{}' ({}) needs a feed", node.name,
               node.outputs[0].to_string());
    st.values[id].resize(node.outputs.size());
    st.readers[id] = std::make_unique<std::atomic<int>[]>(node.outputs.size());
    st.pending[id].store(pending_inputs_[id]);
  }
  for (NodeId id : order_)
    for (const Value& in : graph_.node(id).inputs) st.readers[in.node][in.index]++;
  for (const Value& f : fetches_) st.readers[f.node][f.index]++;

  std::size_t base = pool_->bytes_in_use();
  pool_->reset_peak();
  ++steps_;

  ThreadPool* pool = engine_.inter_op_pool();
  if (pool == nullptr || order_.size() < 2) {
    for (NodeId id : order_) {
      run_node(st, id);
      finish_node(st, id);
    }
  } else {
    run_parallel(st, *pool);
  }
  last_peak_ = pool_->peak_bytes() - std::min(base, pool_->peak_bytes());

  std::vector<Tensor> out;
  out.reserve(fetches_.size());
  for (const Value& f : fetches_) out.push_back(st.values[f.node][f.index]);
  return out;
}


void Executor::run_parallel(RunState& st, ThreadPool& pool) {
  // Each task runs one node, then submits the consumers it made ready. The caller waits for
  // every needed node to finish (or for the first error, after in-flight nodes drain).
  std::function<void(NodeId)> schedule = [&](NodeId id) {
    {
      std::lock_guard lock(st.mu);
      ++st.submitted;
    }
    pool.submit([&, id] {
      if (!st.failed.load()) {
        try {
          run_node(st, id);
          for (NodeId c : finish_node(st, id)) schedule(c);
        } catch (...) {
          std::lock_guard lock(st.mu);
          if (!st.error) st.error = std::current_exception();
          st.failed.store(true);
        }
      }
      std::lock_guard lock(st.mu);
      ++st.done;
      st.done_cv.notify_all();
    });
  };
  for (NodeId id : order_)
    if (pending_inputs_[id] == 0) schedule(id);
  std::unique_lock lock(st.mu);
  // Nodes that never became ready because of an error are never counted, so on failure wait
  // only until every submitted task is done: submitted = done once nothing more can start.
  st.done_cv.wait(lock, [&] {
    return st.done == order_.size() || (st.failed.load() && st.done == st.submitted);
  });
  if (st.error) std::rethrow_exception(st.error);
}

void Executor::run_node(RunState& st, NodeId id) const {
  const Node& node = graph_.node(id);
  auto& outs = st.values[id];
  switch (node.op->kind()) {
    case Op::Kind::placeholder: outs[0] = *st.feed_for[id]; return;
    case Op::Kind::constant: outs[0] = static_cast<const ConstantOp&>(*node.op).value(); return;
    case Op::Kind::variable: {
      const Tensor& v = st.variables->get(node.name);
      const TensorSpec& want = node.outputs[0];
      TRIB_CHECK(v.dtype() == want.dtype && v.shape() == want.shape, InvalidArgument,
                 "variable '{}' holds {} but the graph expects {}", node.name, v.spec_string(),
                 want.to_string());
      outs[0] = v;
      return;
    }
    case Op::Kind::compute: break;
  }
  std::vector<Tensor> inputs;
  inputs.reserve(node.inputs.size());
  for (const Value& in : node.inputs) inputs.push_back(st.values[in.node][in.index]);
  KernelContext ctx(engine_, node, inputs, outs, *pool_, st.options->training,
                    st.options->step.value_or(steps_));
  ctx.input_is_last_use.resize(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const Value& in = node.inputs[i];
    ctx.input_is_last_use[i] = st.readers[in.node][in.index].load() == 1;
  }
  if (omp_get_max_threads() != engine_.intra_op_threads()) omp_set_num_threads(engine_.intra_op_threads());
  try {
    if (st.options->reference_kernels) node.op->reference(ctx);
    else node.op->compute(ctx);
  } catch (const ShapeError& e) {
    throw ShapeError(fmt::format("{} '{}': {}", node.op->name(), node.name, e.what()));
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(fmt::format("{} '{}': {}", node.op->name(), node.name, e.what()));
  } catch (const std::exception& e) {
    throw Error(fmt::format("{} '{}': {}", node.op->name(), node.name, e.what()));
  }
  for (std::size_t i = 0; i < outs.size(); ++i)
    TRIB_CHECK(outs[i].defined(), Error, "{} '{}' left output {} unset", node.op->name(), node.name, i);
}

std::vector<NodeId> Executor::finish_node(RunState& st, NodeId id) const {
  const Node& node = graph_.node(id);
  if (st.options->on_fetch_ready)
    for (std::size_t f = 0; f < fetches_.size(); ++f)
      if (fetches_[f].node == id) st.options->on_fetch_ready(f, st.values[id][fetches_[f].index]);
  // Release inputs whose last reader this was, so their memory returns to the pool now.
  for (const Value& in : node.inputs)
    if (st.readers[in.node][in.index].fetch_sub(1) == 1) st.values[in.node][in.index] = Tensor();
  std::vector<NodeId> ready;
  for (NodeId c : consumers_[id])
    if (st.pending[c].fetch_sub(1) == 1) ready.push_back(c);
  return ready;
}

}  // namespace trib
