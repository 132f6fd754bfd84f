#include "trib/engine/executor.h"

#include <omp.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>

#include "engine/kernels/dnnl_call.h"
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

// One output of one node during a run. A kernel accepting layouts may write a blocked
// layout; readers that want plain tensors (and fetches) then read `plain`, converted once
// right after the producer ran, before any reader can start.
struct Executor::Slot {
  Tensor value;      // as the producer wrote it
  LayoutPtr layout;  // null when value is plain
  Tensor plain;      // value as plain row-major, when layout is set and someone needs it
  std::atomic<int> readers{0};
};

struct Executor::RunState {
  std::span<const Feed> feeds;
  VariableStore* variables = nullptr;
  const RunOptions* options = nullptr;
  std::unique_ptr<Slot[]> slots;                 // per (node, output)
  std::unique_ptr<std::atomic<int>[]> pending;   // per node: producers not yet done
  std::vector<const Tensor*> feed_for;           // per node (placeholders)
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
  slot_base_.resize(n + 1, 0);
  for (std::size_t id = 0; id < n; ++id)
    slot_base_[id + 1] = slot_base_[id] + graph_.node(static_cast<NodeId>(id)).outputs.size();
  slot_readers_.assign(slot_base_[n], 0);
  needs_plain_.assign(slot_base_[n], 0);
  layout_read_.assign(slot_base_[n], 0);
  input_specs_.resize(n);
  accepts_layout_.resize(n);
  threads_.assign(n, 1);
  consumers_.resize(n);
  pending_inputs_.assign(n, 0);
  for (NodeId id = 0; id < static_cast<NodeId>(n); ++id) {
    if (!needed[id]) continue;
    order_.push_back(id);
    const Node& node = graph_.node(id);
    std::vector<NodeId> producers;
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
      const Value& in = node.inputs[i];
      producers.push_back(in.node);
      const bool accepts = node.op->accepts_layout(static_cast<int>(i));
      input_specs_[id].push_back(graph_.spec(in));
      accepts_layout_[id].push_back(accepts);
      slot_readers_[slot_of(in)]++;
      (accepts ? layout_read_ : needs_plain_)[slot_of(in)] = 1;
    }
    if (node.op->kind() == Op::Kind::compute &&
        node.op->cost_ns(input_specs_[id], node.outputs) >= engine_.parallel_node_min_us() * 1e3)
      threads_[id] = engine_.intra_op_threads();
    std::sort(producers.begin(), producers.end());
    producers.erase(std::unique(producers.begin(), producers.end()), producers.end());
    pending_inputs_[id] = static_cast<int>(producers.size());
    for (NodeId p : producers) consumers_[p].push_back(id);
  }
  for (const Value& f : fetches_) {
    slot_readers_[slot_of(f)]++;
    needs_plain_[slot_of(f)] = 1;
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
  st.slots = std::make_unique<Slot[]>(slot_base_[n]);
  st.pending = std::make_unique<std::atomic<int>[]>(n);
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
    st.pending[id].store(pending_inputs_[id]);
    for (std::size_t s = slot_base_[id]; s < slot_base_[id + 1]; ++s)
      st.slots[s].readers.store(slot_readers_[s]);
  }

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
  for (const Value& f : fetches_) {
    const Slot& slot = st.slots[slot_of(f)];
    out.push_back(slot.layout ? slot.plain : slot.value);
  }
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
  Slot* outs = &st.slots[slot_base_[id]];
  switch (node.op->kind()) {
    case Op::Kind::placeholder: outs[0].value = *st.feed_for[id]; return;
    case Op::Kind::constant: outs[0].value = static_cast<const ConstantOp&>(*node.op).value(); return;
    case Op::Kind::variable: {
      const Tensor& v = st.variables->get(node.name);
      const TensorSpec& want = node.outputs[0];
      TRIB_CHECK(v.dtype() == want.dtype && v.shape() == want.shape, InvalidArgument,
                 "variable '{}' holds {} but the graph expects {}", node.name, v.spec_string(),
                 want.to_string());
      outs[0].value = v;
      return;
    }
    case Op::Kind::compute: break;
  }
  const std::size_t k = node.inputs.size(), m = node.outputs.size();
  std::vector<Tensor> inputs(k), outputs(m);
  std::vector<LayoutPtr> in_layouts(k), out_layouts(m);
  std::vector<std::uint8_t> last_use(k);
  for (std::size_t i = 0; i < k; ++i) {
    const Slot& slot = st.slots[slot_of(node.inputs[i])];
    if (slot.layout && accepts_layout_[id][i]) {
      inputs[i] = slot.value;
      in_layouts[i] = slot.layout;
    } else {
      inputs[i] = slot.layout ? slot.plain : slot.value;
    }
    last_use[i] = slot.readers.load() == 1;
  }
  const int threads = threads_[id];
  KernelContext ctx(engine_, node, inputs, input_specs_[id], in_layouts, last_use, outputs,
                    out_layouts, *pool_, threads, st.options->training,
                    st.options->step.value_or(steps_));
  // oneDNN's primitives take their thread count from here, when built and when run.
  if (omp_get_max_threads() != threads) omp_set_num_threads(threads);
  try {
    if (st.options->reference_kernels) node.op->reference(ctx);
    else node.op->compute(ctx);
    for (std::size_t o = 0; o < m; ++o) {
      TRIB_CHECK(outputs[o].defined(), Error, "{} '{}' left output {} unset", node.op->name(),
                 node.name, o);
      Slot& slot = outs[o];
      slot.value = std::move(outputs[o]);
      slot.layout = std::move(out_layouts[o]);
      const std::size_t s = slot_base_[id] + o;
      if (!slot.layout || !needs_plain_[s]) continue;
      // Converted now, once, so that every plain reader finds it ready.
      slot.plain = kernels::to_plain(engine_, *pool_, slot.value, *slot.layout, node.outputs[o]);
      if (!layout_read_[s]) {
        slot.value = std::move(slot.plain);
        slot.layout = nullptr;
        slot.plain = Tensor();
      }
    }
  } catch (const ShapeError& e) {
    throw ShapeError(fmt::format("{} '{}': {}", node.op->name(), node.name, e.what()));
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(fmt::format("{} '{}': {}", node.op->name(), node.name, e.what()));
  } catch (const std::exception& e) {
    throw Error(fmt::format("{} '{}': {}", node.op->name(), node.name, e.what()));
  }
}

std::vector<NodeId> Executor::finish_node(RunState& st, NodeId id) const {
  const Node& node = graph_.node(id);
  if (st.options->on_fetch_ready)
    for (std::size_t f = 0; f < fetches_.size(); ++f)
      if (fetches_[f].node == id) {
        const Slot& slot = st.slots[slot_of(fetches_[f])];
        st.options->on_fetch_ready(f, slot.layout ? slot.plain : slot.value);
      }
  // Release inputs whose last reader this was, so their memory returns to the pool now.
  for (const Value& in : node.inputs) {
    Slot& slot = st.slots[slot_of(in)];
    if (slot.readers.fetch_sub(1) == 1) {
      slot.value = Tensor();
      slot.plain = Tensor();
      slot.layout = nullptr;
    }
  }
  std::vector<NodeId> ready;
  for (NodeId c : consumers_[id])
    if (st.pending[c].fetch_sub(1) == 1) ready.push_back(c);
  return ready;
}

}  // namespace trib
