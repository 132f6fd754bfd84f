#include "trib/train/source_training.h"

#include "train/training_loop.h"

namespace trib::train {

namespace {

// The caller's callbacks at the loop's fixed points; the variables go back at the end.
class SourceHooks final : public TrainingHooks {
 public:
  SourceHooks(const SourceTrainingOptions& plan, bool resuming, VariableStore& out)
      : plan_(plan), resuming_(resuming), out_(out) {}

  void on_start(LoopContext& ctx) override {
    if (plan_.initial == nullptr || resuming_) return;
    for (const std::string& name : ctx.vars.names()) {
      TRIB_CHECK(plan_.initial->contains(name), InvalidArgument,
                 "the starting variables have no '{}', which the model needs", name);
      const Tensor& from = plan_.initial->get(name);
      const Tensor& fresh = ctx.vars.get(name);
      TRIB_CHECK(from.dtype() == fresh.dtype() && from.shape() == fresh.shape(), ShapeError,
                 "starting variable '{}' is {} but the model needs {}", name, from.spec_string(),
                 fresh.spec_string());
      // The same storage: the caller's model trains in place.
      ctx.vars.set(name, from);
    }
  }
  void on_step(LoopContext& ctx, const data::Batch& batch, const StepResult& r) override {
    if (!plan_.on_step) return;
    const std::int64_t rows = batch.rows();
    plan_.on_step(StepMetrics{ctx.step, ctx.epoch(), r.loss, rows > 0 ? double(r.correct) / double(rows) : 0, rows});
  }
  void on_report(LoopContext& ctx) override {
    if (plan_.on_report) plan_.on_report(ctx.step, ctx.epoch(), ctx.vars);
  }
  void on_end(LoopContext& ctx) override {
    for (const std::string& name : ctx.vars.names()) out_.set(name, ctx.vars.get(name));
  }

 private:
  const SourceTrainingOptions& plan_;
  bool resuming_;
  VariableStore& out_;
};

}  // namespace

SourceTrainingResult train_on_source(const TrainerOptions& options, BatchSource& source,
                                     const SourceTrainingOptions& plan) {
  TRIB_CHECK(!options.distribution.make_update && options.distribution.workers == 1, InvalidArgument,
             "train_on_source runs one process; a distributed job runs through `trib train`");
  TRIB_CHECK(plan.total_steps >= 0 && plan.steps_per_epoch >= 0 && plan.report_every >= 0, InvalidArgument,
             "train_on_source: {} steps, {} per epoch, report every {}: none may be negative", plan.total_steps,
             plan.steps_per_epoch, plan.report_every);
  LoopPlan lp;
  lp.total_steps = plan.total_steps;
  lp.steps_per_epoch = plan.steps_per_epoch;
  lp.report_every = plan.report_every > 0 ? plan.report_every : plan.steps_per_epoch > 0 ? plan.steps_per_epoch : 100;
  lp.checkpoint_every = lp.report_every;
  SourceTrainingResult result;
  SourceHooks hooks(plan, options.resume, result.variables);
  result.summary = run_training_loop(options, lp, source, hooks);
  return result;
}

}  // namespace trib::train
