#include "trib/data/csv.h"

#include <charconv>
#include <optional>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "data/csv_fields.h"
#include "file_reader.h"
#include "trib/core/error.h"

namespace trib::data {
namespace {

// from_chars rejects a leading '+', which spreadsheets do write.
template <typename T>
std::optional<T> parse_number(std::string_view text) {
  if (text.starts_with('+')) text.remove_prefix(1);
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
  return value;
}

// " ('sepal_length')" when the file has a header, for error messages.
std::string header_suffix(const std::vector<std::string>& names, int column) {
  return names.empty() ? "" : fmt::format(" ('{}')", names[column]);
}

bool looks_like_header(const std::vector<std::string_view>& fields) {
  for (std::string_view f : fields)
    if (!parse_number<float>(f)) return true;
  return false;
}

// The label column's index among `columns`, from the options.
int label_column(const std::string& path, const CsvOptions& options,
                 const std::vector<std::string>& names, int columns) {
  if (!options.label_name.empty()) {
    TRIB_CHECK(!names.empty(), InvalidArgument,
               "'{}': label column '{}' is named but the file has no header", path, options.label_name);
    for (int c = 0; c < columns; ++c)
      if (names[c] == options.label_name) return c;
    throw InvalidArgument(fmt::format("'{}': no column named '{}' (columns: {})", path,
                                      options.label_name, fmt::join(names, ", ")));
  }
  int c = options.label_index < 0 ? options.label_index + columns : options.label_index;
  TRIB_CHECK(c >= 0 && c < columns, InvalidArgument,
             "'{}': label column index {} is outside a table of {} columns", path,
             options.label_index, columns);
  return c;
}

}  // namespace

InMemoryDataset load_csv(const std::string& path, const CsvOptions& options) {
  const std::string text = FileReader(path).read_all();
  std::vector<std::string> names;  // from the header, if any
  int columns = 0;
  int label = 0;
  std::vector<float> features;
  std::vector<std::int32_t> labels;

  CsvRecordReader records(text, options.delimiter);
  std::vector<std::string_view> fields;
  while (records.next(fields, path)) {
    const std::size_t line_number = records.line();
    if (columns == 0) {  // the first line fixes the layout
      columns = static_cast<int>(fields.size());
      TRIB_CHECK(columns >= 2, InvalidArgument,
                 "'{}':{}: found {} column; expected features and a label (is the delimiter '{}' right?)",
                 path, line_number, columns, options.delimiter);
      bool header = options.header == CsvOptions::Header::present ||
                    (options.header == CsvOptions::Header::detect && looks_like_header(fields));
      if (header) names.assign(fields.begin(), fields.end());
      label = label_column(path, options, names, columns);
      if (header) continue;
    }
    TRIB_CHECK(static_cast<int>(fields.size()) == columns, Corruption,
               "'{}':{}: expected {} columns, found {}", path, line_number, columns, fields.size());
    for (int c = 0; c < columns; ++c) {
      if (c == label) {
        auto value = parse_number<std::int32_t>(fields[c]);
        TRIB_CHECK(value.has_value(), Corruption, "'{}':{}: label column {}{} is not an integer: '{}'",
                   path, line_number, c + 1, header_suffix(names, c), fields[c]);
        TRIB_CHECK(options.num_classes <= 0 || (*value >= 0 && *value < options.num_classes),
                   InvalidArgument, "'{}':{}: label {} is outside [0, {})", path, line_number,
                   *value, options.num_classes);
        labels.push_back(*value);
      } else {
        auto value = parse_number<float>(fields[c]);
        TRIB_CHECK(value.has_value(), Corruption, "'{}':{}: column {}{} is not a number: '{}'", path,
                   line_number, c + 1, header_suffix(names, c), fields[c]);
        features.push_back(*value);
      }
    }
  }
  const std::int64_t feature_count = columns > 0 ? columns - 1 : 0;
  return InMemoryDataset::from_floats(Shape{feature_count}, std::move(features), std::move(labels));
}

}  // namespace trib::data
