// Decodes one record's bytes against a SchemaConfig into a feature row, a label and an id. A
// record that does not fit is not an exception but a DecodeError: the source counts it, sends
// it to the dead-letter topic, and goes on.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>

#include "trib/stream/schema.h"

namespace trib::stream {

namespace detail {
// Hashes std::string and std::string_view alike, so that looking a field name up in a record
// builds no std::string.
struct StringHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using SlotMap = std::unordered_map<std::string, int, StringHash, std::equal_to<>>;
}  // namespace detail

struct DecodeError {
  enum class Kind {
    malformed,           // not a JSON object / not a CSV line
    missing_field,       // a field the schema names is absent
    not_numeric,         // a field is not a number
    label_out_of_range,  // the label is not an integer in [0, num_classes)
  };
  Kind kind = Kind::malformed;
  std::string field;    // the offending field, empty for `malformed`
  std::string message;  // one line, e.g. "field 'amount' is missing"
};

std::string_view kind_name(DecodeError::Kind kind);

struct DecodedRow {
  std::int32_t label = 0;
  std::int64_t id = 0;  // 0 when the schema has no id field
};

class RecordDecoder {
 public:
  // Validates the schema (InvalidArgument).
  explicit RecordDecoder(SchemaConfig schema);

  // Writes the features into `features` (size == feature_count()) and returns the label and
  // id, or the reason the record does not fit.
  std::optional<DecodeError> decode(std::string_view bytes, std::span<float> features, DecodedRow& row) const;

  std::size_t feature_count() const { return schema_.features.size(); }
  const SchemaConfig& schema() const { return schema_; }

 private:
  std::optional<DecodeError> decode_json(std::string_view bytes, std::span<float> features, DecodedRow& row) const;
  std::optional<DecodeError> decode_csv(std::string_view bytes, std::span<float> features, DecodedRow& row) const;

  SchemaConfig schema_;
  // JSON: field name -> slot (0..F-1 features, F label, F+1 id); CSV: column -> slot.
  detail::SlotMap json_slots_;
  std::vector<int> csv_slots_;  // per CSV column, its slot or -1
  int needed_columns_ = 0;      // CSV: columns up to the last one used
};

}  // namespace trib::stream
