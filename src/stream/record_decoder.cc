#include "stream/record_decoder.h"

#include <charconv>
#include <cmath>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/csv_fields.h"
#include "stream/flat_json.h"
#include "trib/core/error.h"

namespace trib::stream {
namespace {

using Kind = DecodeError::Kind;

DecodeError error(Kind kind, std::string field, std::string message) {
  return DecodeError{kind, std::move(field), std::move(message)};
}

// The values of one record, by slot: features 0..F-1, then the label, then the id.
struct Slots {
  explicit Slots(std::size_t features) : values(features + 2), seen(features + 2, false) {}
  std::vector<double> values;
  std::vector<bool> seen;
};

// Reads the top level of a JSON object with nlohmann's SAX interface: no DOM is built, and
// keys the schema does not name are skipped.
class FlatObjectReader : public nlohmann::json_sax<nlohmann::json> {
 public:
  FlatObjectReader(const detail::SlotMap& slots, Slots& out) : slots_(slots), out_(out) {}

  std::optional<DecodeError> failure;

  bool null() override { return scalar(std::nullopt, "null"); }
  bool boolean(bool v) override { return scalar(v ? 1.0 : 0.0, ""); }
  bool number_integer(number_integer_t v) override { return scalar(static_cast<double>(v), ""); }
  bool number_unsigned(number_unsigned_t v) override { return scalar(static_cast<double>(v), ""); }
  bool number_float(number_float_t v, const string_t&) override { return scalar(v, ""); }
  bool string(string_t&) override { return scalar(std::nullopt, "a string"); }
  bool binary(binary_t&) override { return scalar(std::nullopt, "binary"); }
  bool start_object(std::size_t) override { return open("an object"); }
  bool end_object() override { return close(); }
  bool start_array(std::size_t) override { return open("an array"); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    if (depth_ == 1) {
      auto it = slots_.find(k);
      slot_ = it == slots_.end() ? -1 : it->second;
      key_ = k;
    }
    return true;
  }
  bool parse_error(std::size_t at, const std::string&, const nlohmann::detail::exception&) override {
    failure = error(Kind::malformed, "", fmt::format("record is not valid JSON (at byte {})", at));
    return false;
  }

 private:
  bool open(std::string_view what) {
    if (depth_ == 0 && what != "an object") return fail_top(what);
    if (depth_ == 1 && slot_ >= 0) return fail_type(what);
    ++depth_;
    return true;
  }
  bool close() {
    --depth_;
    return true;
  }
  bool fail_top(std::string_view what) {
    failure = error(Kind::malformed, "", fmt::format("record is {}, expected a JSON object", what));
    return false;
  }
  bool fail_type(std::string_view what) {
    failure = error(Kind::not_numeric, key_, fmt::format("field '{}' is {}, expected a number", key_, what));
    return false;
  }
  bool scalar(std::optional<double> v, std::string_view what) {
    if (depth_ == 0) return fail_top(what.empty() ? "a number" : what);
    if (depth_ != 1 || slot_ < 0) return true;
    if (!v) return fail_type(what);
    out_.values[slot_] = *v;
    out_.seen[slot_] = true;
    return true;
  }

  const detail::SlotMap& slots_;
  Slots& out_;
  int depth_ = 0;
  int slot_ = -1;
  std::string key_;
};

std::optional<double> parse_number(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\r')) text.remove_suffix(1);
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  double v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return v;
}

}  // namespace

std::string_view kind_name(DecodeError::Kind kind) {
  switch (kind) {
    case Kind::malformed: return "malformed";
    case Kind::missing_field: return "missing_field";
    case Kind::not_numeric: return "not_numeric";
    case Kind::label_out_of_range: return "label_out_of_range";
  }
  return "unknown";
}

RecordDecoder::RecordDecoder(SchemaConfig schema) : schema_(std::move(schema)) {
  validate(schema_);
  const int f = static_cast<int>(schema_.features.size());
  for (int i = 0; i < f; ++i) json_slots_[schema_.features[i]] = i;
  json_slots_[schema_.label] = f;
  if (!schema_.id_field.empty()) json_slots_[schema_.id_field] = f + 1;
  if (schema_.format != RecordFormat::csv) return;
  for (const std::string& column : schema_.csv_columns) {
    auto it = json_slots_.find(column);
    csv_slots_.push_back(it == json_slots_.end() ? -1 : it->second);
    if (it != json_slots_.end()) needed_columns_ = static_cast<int>(csv_slots_.size());
  }
}

std::optional<DecodeError> RecordDecoder::decode(std::string_view bytes, std::span<float> features,
                                                 DecodedRow& row) const {
  TRIB_CHECK(features.size() == feature_count(), InvalidArgument,
             "RecordDecoder::decode: feature buffer holds {} values, the schema has {} features", features.size(),
             feature_count());
  return schema_.format == RecordFormat::json ? decode_json(bytes, features, row) : decode_csv(bytes, features, row);
}

// Checks that every field was found and fills the outputs, in the schema's order so that the
// error names the first missing field the way a reader of the schema would look for it.
static std::optional<DecodeError> finish(const SchemaConfig& schema, const Slots& slots, std::span<float> features,
                                         DecodedRow& row) {
  const std::size_t f = schema.features.size();
  auto missing = [](const std::string& name) {
    return error(Kind::missing_field, name, fmt::format("field '{}' is missing", name));
  };
  for (std::size_t i = 0; i < f; ++i) {
    if (!slots.seen[i]) return missing(schema.features[i]);
    features[i] = static_cast<float>(slots.values[i]);
  }
  if (!slots.seen[f]) return missing(schema.label);
  const double label = slots.values[f];
  if (!(label >= 0 && label < schema.num_classes && label == std::floor(label)))
    return error(Kind::label_out_of_range, schema.label,
                 fmt::format("label '{}' = {} is not an integer in [0, {})", schema.label, label, schema.num_classes));
  row.label = static_cast<std::int32_t>(label);
  row.id = 0;
  if (schema.id_field.empty()) return std::nullopt;
  if (!slots.seen[f + 1]) return missing(schema.id_field);
  const double id = slots.values[f + 1];
  if (id != std::floor(id) || std::abs(id) > 9.0e15)
    return error(Kind::not_numeric, schema.id_field,
                 fmt::format("id field '{}' = {} is not an integer", schema.id_field, id));
  row.id = static_cast<std::int64_t>(id);
  return std::nullopt;
}

std::optional<DecodeError> RecordDecoder::decode_json(std::string_view bytes, std::span<float> features,
                                                      DecodedRow& row) const {
  Slots slots(feature_count());
  if (detail::scan_flat_object(bytes, json_slots_, slots.values, slots.seen))
    return finish(schema_, slots, features, row);
  slots = Slots(feature_count());  // the fast path may have filled some before declining
  FlatObjectReader reader(json_slots_, slots);
  nlohmann::json::sax_parse(bytes.begin(), bytes.end(), &reader);
  if (reader.failure) return reader.failure;
  return finish(schema_, slots, features, row);
}

std::optional<DecodeError> RecordDecoder::decode_csv(std::string_view bytes, std::span<float> features,
                                                     DecodedRow& row) const {
  while (!bytes.empty() && (bytes.back() == '\n' || bytes.back() == '\r')) bytes.remove_suffix(1);
  if (bytes.empty()) return error(Kind::malformed, "", "record is an empty line, expected CSV");
  Slots slots(feature_count());
  // RFC 4180, as CSV files are read: a quoted cell may hold commas and doubled quotes.
  data::CsvFieldReader cells(bytes, ',');
  data::CsvField cell;
  for (int column = 0; column < needed_columns_; ++column) {
    if (!cells.next(cell)) return error(Kind::malformed, "", fmt::format("record is not valid CSV: {}", cells.error()));
    if (const int slot = csv_slots_[column]; slot >= 0) {
      std::optional<double> v = parse_number(cell.value);
      const std::string& name = schema_.csv_columns[column];
      if (!v)
        return error(Kind::not_numeric, name,
                     fmt::format("field '{}' (column {}) is '{}', expected a number", name, column + 1,
                                 cell.value.substr(0, 40)));
      slots.values[slot] = *v;
      slots.seen[slot] = true;
    }
    if (cell.end != data::CsvField::End::delimiter) break;
  }
  return finish(schema_, slots, features, row);
}

}  // namespace trib::stream
