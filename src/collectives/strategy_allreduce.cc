#include "trib/collectives/strategy_allreduce.h"

#include <fmt/format.h>

#include "collectives/gradient_exchange.h"
#include "collectives/named_tensors.h"
#include "trib/collectives/broadcast.h"
#include "trib/optim/clip.h"

namespace trib::collectives {
namespace {

// Rethrows the current trib error with `context` in front, keeping its class.
[[noreturn]] void rethrow_with(const std::string& context) {
  try {
    throw;
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(fmt::format("{}: {}", context, e.what()));
  } catch (const Unavailable& e) {
    throw Unavailable(fmt::format("{}: {}", context, e.what()));
  } catch (const Timeout& e) {
    throw Timeout(fmt::format("{}: {}", context, e.what()));
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", context, e.what()));
  }
}

}  // namespace

AllreduceUpdate::AllreduceUpdate(AllreduceUpdateOptions options) : o_(std::move(options)) {
  TRIB_CHECK(o_.group && o_.optimizer && o_.schedule, InvalidArgument,
             "AllreduceUpdate needs a group, an optimizer and a schedule");
  TRIB_CHECK(o_.bucket_bytes >= sizeof(float), InvalidArgument, "allreduce strategy: bucket size {} bytes is too small",
             o_.bucket_bytes);
  workers_ = o_.group->size();
  exchange_ = std::make_unique<GradientExchange>(o_.group, o_.bucket_bytes, o_.compression);
}

AllreduceUpdate::~AllreduceUpdate() = default;

void AllreduceUpdate::broadcast_variables(VariableStore& vars) {
  for (const std::string& name : vars.names()) {
    try {
      broadcast(*o_.group, vars.get(name), {.root = 0});
    } catch (const Error&) {
      rethrow_with(fmt::format("making worker {} start from worker 0's variables (variable '{}')", o_.group->rank(),
                               name));
    }
  }
}

std::int64_t AllreduceUpdate::start(VariableStore& vars, const Checkpoint* checkpoint) {
  TRIB_CHECK(o_.group != nullptr, InvalidArgument, "allreduce strategy: start() after finish()");
  std::int64_t step = UpdateStrategy::start(vars, checkpoint);
  Tensor s = Tensor::from_vector<std::int64_t>(Shape{1}, {step});
  try {
    broadcast(*o_.group, s, {.root = 0});
  } catch (const Error&) {
    rethrow_with(fmt::format("worker {} agreeing on the starting step", o_.group->rank()));
  }
  broadcast_variables(vars);
  broadcast_slots();
  return *s.data<std::int64_t>();
}

void AllreduceUpdate::broadcast_slots() {
  std::map<std::string, Tensor> slots = slots_.to_tensors();
  try {
    broadcast_named_tensors(*o_.group, slots, 0);
  } catch (const Error&) {
    rethrow_with(fmt::format("giving worker {} the chief's optimizer state", o_.group->rank()));
  }
  if (o_.group->rank() != 0) restore_state(slots);
}

void AllreduceUpdate::finish() {
  final_report_ = report();  // the trainer asks for it after finish()
  exchange_.reset();
  o_.group.reset();
}

std::string AllreduceUpdate::report() const {
  if (!exchange_) return final_report_;
  GradientExchange::Stats st = exchange_->stats();
  if (st.steps == 0) return "";
  return fmt::format(
      "allreduce: {} workers, {} bucket(s) of up to {:.1f} MiB{}, {:.2f} MiB averaged per step ({} compression); "
      "apply() waited {:.2f} ms per step for the exchange; {:.0f}% of exchanges started during backprop",
      workers_, st.buckets, static_cast<double>(o_.bucket_bytes) / (1 << 20),
      st.sparse ? fmt::format(" + {} sparse gradient(s) allgathered", st.sparse) : "",
      static_cast<double>(st.dense_bytes) / (1 << 20), compression_name(o_.compression),
      st.waited_seconds * 1e3 / static_cast<double>(st.steps),
      100.0 * static_cast<double>(st.early) / static_cast<double>(std::max<std::uint64_t>(1, st.items)));
}

void AllreduceUpdate::on_gradient_ready(std::size_t index, const train::GradTensor& grad) {
  TRIB_CHECK(exchange_ != nullptr, InvalidArgument, "allreduce strategy: a gradient after finish()");
  exchange_->report(index, grad);
}

bool AllreduceUpdate::apply(std::int64_t step, std::vector<train::GradTensor>& grads, VariableStore& vars) {
  TRIB_CHECK(grads.size() == o_.parameters.size(), InvalidArgument, "{} gradients for {} parameters", grads.size(),
             o_.parameters.size());
  TRIB_CHECK(exchange_ != nullptr, InvalidArgument, "allreduce strategy: apply() after finish()");
  try {
    exchange_->finish(grads);
  } catch (const Error&) {
    rethrow_with(fmt::format("step {}: averaging gradients over {} workers", step, o_.group->size()));
  }
  // Every worker holds the same averages, so every worker makes the same decision here.
  if (!train::all_finite(grads)) {
    TRIB_CHECK(++consecutive_skips_ < o_.max_consecutive_skips, Error,
               "{} steps in a row had NaN or Inf gradients (last at step {}); stopping. Lower the learning rate or "
               "enable training.clip_norm",
               consecutive_skips_, step);
    return false;
  }
  consecutive_skips_ = 0;
  if (o_.clip_norm > 0) {
    std::vector<Tensor> values;
    for (const train::GradTensor& g : grads) values.push_back(g.values);
    clip_by_global_norm(values, o_.clip_norm);
  }
  const float lr = o_.schedule->lr(step);
  for (std::size_t i = 0; i < grads.size(); ++i) {
    Tensor& param = vars.get(o_.parameters[i]);
    if (grads[i].sparse()) {
      o_.optimizer->apply_sparse(o_.parameters[i], param, grads[i].values, grads[i].indices, slots_, lr);
    } else {
      o_.optimizer->apply(o_.parameters[i], param, grads[i].values, slots_, lr);
    }
  }
  return true;
}

void AllreduceUpdate::restore_state(const std::map<std::string, Tensor>& tensors) {
  slots_.clear();
  slots_.load_tensors(tensors);
}

std::shared_ptr<const Schedule> make_allreduce_schedule(ScheduleConfig schedule, float base_lr, int workers,
                                                        std::int64_t per_worker_batch,
                                                        const AllreduceStrategyConfig& config) {
  TRIB_CHECK(workers >= 1 && per_worker_batch >= 1, InvalidArgument,
             "allreduce schedule: {} workers at batch {} per worker", workers, per_worker_batch);
  if (config.linear_scaling && workers > 1) {
    schedule.linear_scaling = true;
    if (schedule.global_batch == 0) schedule.global_batch = workers * per_worker_batch;
    if (schedule.base_batch == 0) schedule.base_batch = per_worker_batch;
    if (schedule.warmup_steps == 0) schedule.warmup_steps = config.warmup_steps;
    // Goyal et al.'s gradual warm-up starts from the unscaled rate.
    if (schedule.warmup_start_factor == 0) {
      schedule.warmup_start_factor =
          static_cast<float>(static_cast<double>(schedule.base_batch) / static_cast<double>(schedule.global_batch));
    }
  }
  return make_schedule(schedule, base_lr);
}

std::unique_ptr<AllreduceUpdate> make_allreduce_update(std::shared_ptr<Group> group,
                                                       std::vector<std::string> parameters,
                                                       const OptimizerConfig& optimizer,
                                                       const ScheduleConfig& schedule,
                                                       const AllreduceStrategyConfig& config,
                                                       std::int64_t per_worker_batch, double clip_norm) {
  TRIB_CHECK(group != nullptr, InvalidArgument, "make_allreduce_update needs a group");
  TRIB_CHECK(config.bucket_mb > 0, InvalidArgument, "strategy.bucket_mb = {} must be positive", config.bucket_mb);
  AllreduceUpdateOptions o;
  o.schedule = make_allreduce_schedule(schedule, optimizer.lr, group->size(), per_worker_batch, config);
  o.group = std::move(group);
  o.parameters = std::move(parameters);
  o.optimizer = make_optimizer(optimizer);
  o.bucket_bytes = static_cast<std::size_t>(config.bucket_mb * 1024 * 1024);
  o.compression = config.compression;
  o.clip_norm = clip_norm;
  return std::make_unique<AllreduceUpdate>(std::move(o));
}

}  // namespace trib::collectives
