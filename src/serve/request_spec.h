// What a prediction request must hold, for the codecs to check it against: the model's input
// shape, the batch limit and, for a stream job's model, the schema that turns named event
// fields into its feature vector.
#pragma once

#include <cstdint>

#include "trib/config/stream_config.h"
#include "trib/core/shape.h"

namespace trib::serve {

struct RequestSpec {
  Shape input;                                     // one example's shape
  std::int64_t max_batch = 1024;                   // rows per request
  const config::SchemaDataConfig* schema = nullptr;  // set for a stream job: "events" accepted
};

// Throws RequestError (400) naming row `row` and the value if any of a row's values is NaN
// or infinite.
void check_finite(const float* values, std::int64_t rows, std::int64_t width);

}  // namespace trib::serve
