#include "serve/json_codec.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "serve/request_error.h"

namespace trib::serve {

using nlohmann::json;

namespace {

const char* type_name(const json& v) { return v.type_name(); }

// Appends the numbers of `v`, nested as dims[depth...] prescribe; throws naming the position.
void read_nested(const json& v, const Shape& input, int depth, std::int64_t instance, std::vector<float>& out) {
  if (depth == input.rank()) {
    if (!v.is_number())
      throw RequestError(400, fmt::format("instance {}, value {} is {}: expected a number", instance,
                                          out.size() % std::max<std::int64_t>(1, input.numel()), type_name(v)));
    out.push_back(static_cast<float>(v.get<double>()));
    return;
  }
  if (!v.is_array() || static_cast<std::int64_t>(v.size()) != input[depth])
    throw RequestError(400, fmt::format("instance {} does not fit the input shape {}: at depth {} expected an array "
                                        "of {}, got {}",
                                        instance, input.to_string(), depth + 1, input[depth],
                                        v.is_array() ? fmt::format("{} elements", v.size()) : type_name(v)));
  for (const json& e : v) read_nested(e, input, depth + 1, instance, out);
}

void read_instance(const json& v, const Shape& input, std::int64_t instance, std::vector<float>& out) {
  const std::int64_t width = input.numel();
  // Flat: the input's element count of numbers (a [1, 28, 28] image as 784 values).
  if (v.is_array() && static_cast<std::int64_t>(v.size()) == width &&
      std::all_of(v.begin(), v.end(), [](const json& e) { return e.is_number(); })) {
    for (const json& e : v) out.push_back(static_cast<float>(e.get<double>()));
    return;
  }
  const bool nested_length = v.is_array() && static_cast<std::int64_t>(v.size()) == input[0];
  if (!nested_length) {
    const std::string got = v.is_array() ? fmt::format("has {} elements", v.size()) : fmt::format("is {}", type_name(v));
    if (input.rank() == 1)
      throw RequestError(400, fmt::format("instance {} {}: the model takes {} values (input shape {})", instance, got,
                                          width, input.to_string()));
    throw RequestError(400, fmt::format("instance {} {}: expected {} numbers, or arrays nested as the input shape {}",
                                        instance, got, width, input.to_string()));
  }
  read_nested(v, input, 0, instance, out);
}

// sign(x) * log(1 + |x|), as the stream job's training applied it (schema.log1p).
float log1p_signed(float v) { return std::copysign(std::log1p(std::fabs(v)), v); }

void read_event(const json& v, const config::SchemaDataConfig& schema, std::int64_t event, std::vector<float>& out) {
  if (!v.is_object()) throw RequestError(400, fmt::format("event {} is {}: expected an object", event, type_name(v)));
  for (const std::string& field : schema.features) {
    auto it = v.find(field);
    if (it == v.end()) throw RequestError(400, fmt::format("event {} has no field '{}'", event, field));
    float x;
    if (it->is_number())
      x = static_cast<float>(it->get<double>());
    else if (it->is_boolean())
      x = it->get<bool>() ? 1.0f : 0.0f;
    else
      throw RequestError(400, fmt::format("event {}, field '{}' is {}: expected a number", event, field,
                                          type_name(*it)));
    if (std::find(schema.log1p.begin(), schema.log1p.end(), field) != schema.log1p.end()) x = log1p_signed(x);
    out.push_back(x);
  }
}

}  // namespace

Tensor parse_json_request(std::string_view body, const RequestSpec& spec) {
  json doc;
  try {
    doc = json::parse(body);
  } catch (const json::parse_error& e) {
    throw RequestError(400, fmt::format("the body is not JSON: {}", e.what()));
  }
  const bool events = doc.is_object() && doc.contains("events");
  const char* key = events ? "events" : "instances";
  if (!doc.is_object() || !doc.contains(key))
    throw RequestError(400, spec.schema ? "expected a JSON object with \"instances\": [[...], ...] or \"events\": "
                                          "[{...}, ...]"
                                        : "expected a JSON object with \"instances\": [[...], ...]");
  if (events && !spec.schema)
    throw RequestError(400, "\"events\" needs a stream job's model (data.schema names the fields); send \"instances\"");
  const json& rows = doc[key];
  if (!rows.is_array() || rows.empty())
    throw RequestError(400, fmt::format("\"{}\" is {}: expected a non-empty array", key,
                                        rows.is_array() ? "empty" : type_name(rows)));
  const auto n = static_cast<std::int64_t>(rows.size());
  if (n > spec.max_batch)
    throw RequestError(413, fmt::format("{} {} in one request: at most {} (--max-batch)", n, key, spec.max_batch));
  const std::int64_t width = spec.input.numel();
  std::vector<float> values;
  values.reserve(static_cast<std::size_t>(n * width));
  for (std::int64_t i = 0; i < n; ++i) {
    if (events)
      read_event(rows[static_cast<std::size_t>(i)], *spec.schema, i, values);
    else
      read_instance(rows[static_cast<std::size_t>(i)], spec.input, i, values);
  }
  check_finite(values.data(), n, width);
  return Tensor::from_vector(Shape{n, width}, values);
}

std::string json_response(const Tensor& logits, std::int64_t step) {
  const std::int64_t rows = logits.shape()[0], classes = logits.shape()[1];
  const float* z = logits.data<float>();
  json out_logits = json::array(), out_probs = json::array(), predictions = json::array();
  for (std::int64_t r = 0; r < rows; ++r) {
    const float* row = z + r * classes;
    const float top = *std::max_element(row, row + classes);
    double sum = 0;
    for (std::int64_t c = 0; c < classes; ++c) sum += std::exp(double(row[c]) - top);
    json l = json::array(), p = json::array();
    for (std::int64_t c = 0; c < classes; ++c) {
      l.push_back(row[c]);
      p.push_back(static_cast<float>(std::exp(double(row[c]) - top) / sum));
    }
    out_logits.push_back(std::move(l));
    out_probs.push_back(std::move(p));
    predictions.push_back(std::max_element(row, row + classes) - row);
  }
  json out = {{"step", step}, {"logits", std::move(out_logits)}, {"probabilities", std::move(out_probs)},
              {"predictions", std::move(predictions)}};
  return out.dump();
}

}  // namespace trib::serve
