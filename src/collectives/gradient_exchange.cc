#include "collectives/gradient_exchange.h"

#include <chrono>
#include <cstring>

#include "collectives/named_tensors.h"
#include "collectives/reduce_kernels.h"
#include "collectives/tensor_view.h"
#include "trib/collectives/allgather.h"

namespace trib::collectives {

GradientExchange::GradientExchange(std::shared_ptr<Group> group, std::size_t bucket_bytes, Compression compression,
                                   bool share_bytes, std::size_t max_shared_bytes)
    : group_(std::move(group)),
      bucket_bytes_(bucket_bytes),
      compression_(compression),
      share_bytes_(share_bytes),
      max_shared_bytes_(max_shared_bytes) {
  TRIB_CHECK(group_ != nullptr, InvalidArgument, "the allreduce strategy needs a group");
}

GradientExchange::~GradientExchange() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    if (busy_) group_->abort("the allreduce strategy was stopped in the middle of a step");
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void GradientExchange::start(const std::vector<update::GradTensor>& grads) {
  plan_ = BucketPlan(grads, bucket_bytes_);
  for (int b = 0; b < plan_.buckets(); ++b) {
    buckets_.push_back(Tensor::zeros(DType::f32, Shape{plan_.bucket_elements(b)}));
    pending_.push_back(plan_.bucket_members(b));
  }
  sparse_item_.assign(grads.size(), -1);
  for (std::size_t s = 0; s < plan_.sparse().size(); ++s) {
    sparse_item_[plan_.sparse()[s]] = plan_.buckets() + static_cast<int>(s);
  }
  sparse_in_.resize(plan_.sparse().size());
  stats_.buckets = plan_.buckets();
  stats_.sparse = static_cast<int>(plan_.sparse().size());
  stats_.item_seconds.assign(static_cast<std::size_t>(items()), 0.0);
  for (int b = 0; b < plan_.buckets(); ++b) stats_.dense_bytes += 4 * static_cast<std::uint64_t>(plan_.bucket_elements(b));
  sparse_out_.resize(plan_.sparse().size());
  reported_.assign(grads.size(), false);
  ready_.assign(static_cast<std::size_t>(items()), 0);
  done_.assign(static_cast<std::size_t>(items()), 0);
  started_ = true;
  // A model part without parameters (a pipeline stage of only a flatten) has nothing to
  // exchange: its communication thread would spin through empty steps, so there is none.
  if (items() > 0 || share_bytes_) thread_ = std::thread([this] { comm_main(); });
}

void GradientExchange::report(std::size_t index, const update::GradTensor& grad) {
  {
    std::lock_guard lock(mu_);
    if (!started_ || reported_[index]) return;
    const BucketSlot& slot = plan_.slot(index);
    TRIB_CHECK(grad.values.shape() == slot.shape && grad.sparse() == (slot.bucket < 0), InvalidArgument,
               "allreduce strategy: gradient {} is {}{} but was {}{} in the first step", index,
               grad.values.spec_string(), grad.sparse() ? " (sparse)" : "", slot.shape.to_string(),
               slot.bucket < 0 ? " (sparse)" : "");
    reported_[index] = true;
  }
  const BucketSlot& slot = plan_.slot(index);  // the plan never changes once made
  if (slot.bucket >= 0 && grad.values.nbytes() > 0) {
    // Outside the lock: gradients own disjoint ranges of their bucket.
    std::memcpy(buckets_[static_cast<std::size_t>(slot.bucket)].data<float>() + slot.offset,
                grad.values.data<float>(), grad.values.nbytes());
  }
  {
    std::lock_guard lock(mu_);
    if (slot.bucket >= 0) {
      if (--pending_[static_cast<std::size_t>(slot.bucket)] == 0) ready_[static_cast<std::size_t>(slot.bucket)] = step_;
    } else {
      const int item = sparse_item_[index];
      sparse_in_[static_cast<std::size_t>(item - plan_.buckets())] = grad;
      ready_[static_cast<std::size_t>(item)] = step_;
    }
  }
  cv_.notify_all();
}

void GradientExchange::share(std::string bytes) {
  {
    std::lock_guard lock(mu_);
    share_locked(std::move(bytes));
  }
  cv_.notify_all();
}

void GradientExchange::share_locked(std::string bytes) {
  if (!share_bytes_ || shared_ready_ == step_) return;
  shared_in_ = std::move(bytes);
  shared_ready_ = step_;
}

void GradientExchange::finish(std::vector<update::GradTensor>& grads) {
  if (!started_) start(grads);
  {
    std::lock_guard lock(mu_);
    share_locked("");  // none given this step: every worker still runs the allgather
  }
  cv_.notify_all();
  TRIB_CHECK(grads.size() == plan_.parameters(), InvalidArgument, "allreduce strategy: {} gradients for {} parameters",
             grads.size(), plan_.parameters());
  const auto began = std::chrono::steady_clock::now();
  {
    std::lock_guard lock(mu_);
    for (std::uint64_t r : ready_) stats_.early += r == step_ ? 1 : 0;
    const double in_progress = busy_ ? std::chrono::duration<double>(began - op_began_).count() : 0.0;
    stats_.hidden_seconds += step_comm_seconds_ + in_progress;
  }
  for (std::size_t i = 0; i < grads.size(); ++i) report(i, grads[i]);
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] {
    if (error_) return true;
    if (share_bytes_ && shared_done_ != step_) return false;
    for (std::uint64_t d : done_) {
      if (d != step_) return false;
    }
    return true;
  });
  if (error_) std::rethrow_exception(error_);
  stats_.waited_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  stats_.items += static_cast<std::uint64_t>(items());
  ++stats_.steps;
  for (std::size_t i = 0; i < grads.size(); ++i) {
    const BucketSlot& slot = plan_.slot(i);
    if (slot.bucket >= 0) {
      grads[i].values = detail::flat_view(buckets_[static_cast<std::size_t>(slot.bucket)], slot.offset,
                                          slot.shape.numel()).reshape(slot.shape);
    } else {
      grads[i] = sparse_out_[static_cast<std::size_t>(sparse_item_[i] - plan_.buckets())];
    }
  }
  ++step_;
  step_comm_seconds_ = 0;
  reported_.assign(reported_.size(), false);
  for (int b = 0; b < plan_.buckets(); ++b) pending_[static_cast<std::size_t>(b)] = plan_.bucket_members(b);
}

GradientExchange::Stats GradientExchange::stats() const {
  std::lock_guard lock(mu_);
  return stats_;
}

bool GradientExchange::run_when(const std::function<bool()>& ready, const std::function<void()>& op,
                                const std::function<void(double seconds)>& done) {
  {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return stopping_ || ready(); });
    if (stopping_) return false;
    busy_ = true;
    op_began_ = Clock::now();
  }
  try {
    op();
  } catch (...) {
    {
      std::lock_guard lock(mu_);
      error_ = std::current_exception();
      busy_ = false;
    }
    cv_.notify_all();
    return false;
  }
  {
    std::lock_guard lock(mu_);
    const double took = std::chrono::duration<double>(Clock::now() - op_began_).count();
    step_comm_seconds_ += took;
    stats_.comm_seconds += took;
    done(took);
    busy_ = false;
  }
  cv_.notify_all();
  return true;
}

void GradientExchange::comm_main() {
  for (std::uint64_t step = 1;; ++step) {
    std::vector<std::string> shared;
    if (share_bytes_ &&
        !run_when([&] { return shared_ready_ == step; },
                  [&] { shared = allgather_bytes(*group_, shared_in_, max_shared_bytes_, shared_slot_); },
                  [&](double) {
                    shared_out_ = std::move(shared);
                    shared_done_ = step;
                  }))
      return;
    for (int item = 0; item < items(); ++item) {
      const auto i = static_cast<std::size_t>(item);
      if (!run_when([&] { return ready_[i] == step; }, [&] { run_item(item); },
                    [&](double took) {
                      done_[i] = step;
                      stats_.item_seconds[i] += took;
                    }))
        return;
    }
  }
}

void GradientExchange::run_item(int item) {
  if (item < plan_.buckets()) {
    allreduce(*group_, buckets_[static_cast<std::size_t>(item)], {.average = true, .compression = compression_});
    return;
  }
  // A sparse gradient: everyone's rows and indices, one after another, over the group size
  // (each worker's rows are already divided by its own batch).
  const auto s = static_cast<std::size_t>(item - plan_.buckets());
  const update::GradTensor& in = sparse_in_[s];
  update::GradTensor out;
  out.values = allgather(*group_, in.values, {.same_shape = false});
  out.indices = allgather(*group_, in.indices, {.same_shape = false});
  detail::scale(out.values.data<float>(), out.values.numel(), 1.0f / static_cast<float>(group_->size()));
  sparse_out_[s] = std::move(out);
  sparse_in_[s] = {};
}

}  // namespace trib::collectives
