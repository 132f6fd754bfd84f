#include "serve/request_spec.h"

#include <cmath>

#include <fmt/format.h>

#include "serve/request_error.h"

namespace trib::serve {

void check_finite(const float* values, std::int64_t rows, std::int64_t width) {
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t c = 0; c < width; ++c) {
      const float v = values[r * width + c];
      if (!std::isfinite(v))
        throw RequestError(400, fmt::format("instance {}, value {} is {}: expected a finite number", r, c,
                                            std::isnan(v) ? "NaN" : "infinite"));
    }
}

}  // namespace trib::serve
