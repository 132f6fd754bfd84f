// What a record on a topic looks like: its format and which of its fields are the features (in
// order), the label and, optionally, an event id. It is the `schema:` section of a streaming job.
//
//   JSON: one flat object per record, {"amount": 12.5, "hour": 3, ..., "label": 0}; numbers
//         (and true/false, read as 1/0) are accepted, other keys are ignored.
//   CSV:  one line per record, no header; `csv_columns` names its columns in order, e.g.
//         "id,ts,amount,hour,label", and the other fields are picked by those names.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace trib::stream {

enum class RecordFormat { json, csv };

// "json" or "csv"; InvalidArgument naming the text otherwise.
RecordFormat parse_record_format(std::string_view text);
std::string_view format_name(RecordFormat format);

struct SchemaConfig {
  RecordFormat format = RecordFormat::json;
  std::vector<std::string> features;  // at least one, in the order of the feature vector
  std::string label;                  // an integer in [0, num_classes)
  std::string id_field;               // optional: an integer id carried along ("event_id")
  std::vector<std::string> csv_columns;  // CSV only: every column of a line, in order
  int num_classes = 2;
};

// Throws InvalidArgument naming the problem: no features, an empty or repeated name, a label
// that is also a feature, num_classes < 2, or (CSV) a field missing from csv_columns.
void validate(const SchemaConfig& schema);

}  // namespace trib::stream
