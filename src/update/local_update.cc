#include "trib/update/local_update.h"

#include "trib/optim/clip.h"
#include "update/all_finite.h"

namespace trib::update {

LocalUpdate::LocalUpdate(LocalUpdateOptions options) : o_(std::move(options)) {
  TRIB_CHECK(o_.optimizer && o_.schedule, InvalidArgument, "LocalUpdate needs an optimizer and a schedule");
}

bool LocalUpdate::apply(std::int64_t step, std::vector<GradTensor>& grads, VariableStore& vars) {
  TRIB_CHECK(grads.size() == o_.parameters.size(), InvalidArgument,
             "{} gradients for {} parameters", grads.size(), o_.parameters.size());
  if (!all_finite(grads)) {
    TRIB_CHECK(++consecutive_skips_ < o_.max_consecutive_skips, Error,
               "{} steps in a row had NaN or Inf gradients (last at step {}); stopping. Lower the "
               "learning rate or enable training.clip_norm",
               consecutive_skips_, step);
    return false;
  }
  consecutive_skips_ = 0;
  if (o_.clip_norm > 0) {
    std::vector<Tensor> dense;
    for (const GradTensor& g : grads) dense.push_back(g.values);
    clip_by_global_norm(dense, o_.clip_norm);
  }
  const float lr = o_.schedule->lr(step);
  for (std::size_t i = 0; i < grads.size(); ++i) {
    Tensor& param = vars.get(o_.parameters[i]);
    if (grads[i].sparse())
      o_.optimizer->apply_sparse(o_.parameters[i], param, grads[i].values, grads[i].indices, slots_, lr);
    else
      o_.optimizer->apply(o_.parameters[i], param, grads[i].values, slots_, lr);
  }
  return true;
}

void LocalUpdate::restore_state(const std::map<std::string, Tensor>& tensors) {
  slots_.clear();
  slots_.load_tensors(tensors);
}

}  // namespace trib::update
