// A CSV reader for numeric tables: every column is an f32 feature except one integer label
// column. Gzipped files are read too. Errors name the file, the line and, for a bad field, the
// column, e.g. "iris.csv:17: expected 5 columns, found 4".
#pragma once

#include <string>

#include "trib/data/in_memory_dataset.h"

namespace trib::data {

struct CsvOptions {
  enum class Header { detect, present, absent };

  char delimiter = ',';
  // detect: the first line is a header when any of its fields is not a number.
  Header header = Header::detect;
  // The label column by header name, when set; otherwise by index (negative counts from the
  // end, so -1 is the last column).
  std::string label_name = {};
  int label_index = -1;
  // Labels must lie in [0, num_classes); 0 skips the check.
  int num_classes = 0;
};

// Features f32 [N, columns - 1], labels i32 [N]. Blank lines are skipped. Quoting follows
// RFC 4180: a quoted field may hold delimiters, line breaks and doubled quotes ("" is ");
// a quoted number is read as a number.
InMemoryDataset load_csv(const std::string& path, const CsvOptions& options = {});

}  // namespace trib::data
