#include "trib/nn/dropout.h"

#include "trib/engine/ops.h"

namespace trib::nn {

Dropout::Dropout(float rate, std::string name) : Layer(std::move(name)), rate_(rate) {
  TRIB_CHECK(rate >= 0.0f && rate < 1.0f, InvalidArgument,
             "dropout rate {} is out of range: expected 0 <= rate < 1", rate);
}

Value Dropout::operator()(ModelBuilder& mb, Value x) {
  NameScope scope(mb.graph(), name());
  if (rate_ == 0.0f) return x;
  return ops::dropout(mb.graph(), x, rate_, mb.next_seed());
}

}  // namespace trib::nn
