// The JSON wire form (docs/serving.md):
//   request   {"instances": [[f, f, ...], ...]}   each instance flat (the input's element
//             count) or nested to the input shape, e.g. [[[...28 values]...28 rows]] for [1, 28, 28]
//        or   {"events": [{"amount": 12.5, ...}, ...]}   a stream job's model: the schema's
//             feature fields by name, transformed as in training (schema.log1p)
//   response  {"step": S, "logits": [[...]], "probabilities": [[...]], "predictions": [c, ...]}
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "serve/request_spec.h"
#include "trib/core/tensor.h"

namespace trib::serve {

// Features [rows, input element count]. Throws RequestError naming what does not fit.
Tensor parse_json_request(std::string_view body, const RequestSpec& spec);

// `logits` [rows, classes] as the response object; `step` is the checkpoint that scored them.
std::string json_response(const Tensor& logits, std::int64_t step);

}  // namespace trib::serve
