#include "trib/stream/schema.h"

#include <algorithm>
#include <set>

#include <fmt/ranges.h>

#include "trib/core/error.h"

namespace trib::stream {

RecordFormat parse_record_format(std::string_view text) {
  if (text == "json") return RecordFormat::json;
  if (text == "csv") return RecordFormat::csv;
  throw InvalidArgument(fmt::format("record format '{}' is unknown: expected json or csv", text));
}

std::string_view format_name(RecordFormat format) { return format == RecordFormat::json ? "json" : "csv"; }

void validate(const SchemaConfig& schema) {
  TRIB_CHECK(!schema.features.empty(), InvalidArgument, "schema: 'features' is empty: name at least one field");
  TRIB_CHECK(!schema.label.empty(), InvalidArgument, "schema: 'label' is empty: name the label field");
  TRIB_CHECK(schema.num_classes >= 2, InvalidArgument, "schema: num_classes {} < 2", schema.num_classes);
  std::set<std::string> seen;
  for (const std::string& f : schema.features) {
    TRIB_CHECK(!f.empty(), InvalidArgument, "schema: a feature name is empty");
    TRIB_CHECK(seen.insert(f).second, InvalidArgument, "schema: feature '{}' is listed twice", f);
  }
  TRIB_CHECK(!seen.contains(schema.label), InvalidArgument, "schema: '{}' is both the label and a feature",
             schema.label);
  TRIB_CHECK(schema.id_field.empty() || (!seen.contains(schema.id_field) && schema.id_field != schema.label),
             InvalidArgument, "schema: id field '{}' is also a feature or the label", schema.id_field);
  if (schema.format == RecordFormat::json) return;

  TRIB_CHECK(!schema.csv_columns.empty(), InvalidArgument,
             "schema: format csv needs 'csv_columns', the names of a line's columns in order");
  std::set<std::string> columns;
  for (const std::string& c : schema.csv_columns)
    TRIB_CHECK(columns.insert(c).second, InvalidArgument, "schema: csv column '{}' is listed twice", c);
  auto require = [&](const std::string& field, std::string_view role) {
    TRIB_CHECK(columns.contains(field), InvalidArgument, "schema: {} '{}' is not among csv_columns ({})", role,
               field, fmt::format("{}", fmt::join(schema.csv_columns, ",")));
  };
  for (const std::string& f : schema.features) require(f, "feature");
  require(schema.label, "label");
  if (!schema.id_field.empty()) require(schema.id_field, "id field");
}

}  // namespace trib::stream
