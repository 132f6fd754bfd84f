// Range checks for optimizer hyperparameters, so a bad config fails at construction with the
// optimizer and option named, not as NaNs many steps later.
#pragma once

#include <cmath>
#include <string_view>

#include "trib/core/error.h"

namespace trib::optim_detail {

// Checks lo <= value < hi (or value <= hi when hi_inclusive).
inline void check_hyper(std::string_view optimizer, std::string_view option, float value, float lo, float hi,
                        bool hi_inclusive = false) {
  const bool ok = std::isfinite(value) && value >= lo && (hi_inclusive ? value <= hi : value < hi);
  TRIB_CHECK(ok, InvalidArgument, "{}: {} = {} is outside [{}, {}{}", optimizer, option, value, lo, hi,
             hi_inclusive ? "]" : ")");
}

inline constexpr float kUnbounded = 3.0e38f;

}  // namespace trib::optim_detail
