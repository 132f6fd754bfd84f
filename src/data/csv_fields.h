// RFC 4180 CSV read one field at a time: the one parser behind the CSV file reader
// (csv.cc) and the stream's CSV record decoder. A field may be quoted, and then holds
// delimiters, line breaks and doubled quotes: `"a, ""b"""` is `a, "b"`.
#pragma once

#include <cstddef>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace trib::data {

struct CsvField {
  enum class End { delimiter, record, text };  // what came after the field

  // Without its quotes, doubled quotes made single; an unquoted field without the spaces
  // and tabs around it (nor a '\r' before the line break). Valid until the next read.
  std::string_view value;
  End end = End::text;
  bool quoted = false;
  bool undoubled = false;  // the value had doubled quotes: it lies in the reader, not the text
};

class CsvFieldReader {
 public:
  CsvFieldReader(std::string_view text, char delimiter) : text_(text), delimiter_(delimiter) {}

  // Reads the next field. False, with error() set, for a quote that is never closed or text
  // after a closing quote (`"a"b`); spaces around the quotes are allowed. A quote inside an
  // unquoted field is kept as it is.
  bool next(CsvField& field);

  bool at_end() const { return pos_ >= text_.size(); }
  // The 1-based line the reader is on, counting line breaks inside quotes too.
  std::size_t line() const { return line_; }
  const std::string& error() const { return error_; }

 private:
  bool is_blank(char c) const { return (c == ' ' || c == '\t') && c != delimiter_; }
  bool read_quoted(CsvField& field);
  bool finish(CsvField& field);  // reads what ends a field

  std::string_view text_;
  char delimiter_;
  std::size_t pos_ = 0;
  std::size_t line_ = 1;
  std::string scratch_;  // a quoted field's value when it had doubled quotes
  std::string error_;
};

// Whole records, for a reader that needs every field of a record at once. Lines that hold
// only blanks are skipped.
class CsvRecordReader {
 public:
  CsvRecordReader(std::string_view text, char delimiter) : fields_(text, delimiter) {}

  // The next record's fields (valid until the next call); false at the end of the text.
  // Throws Corruption, naming `source`, the line and the problem, for bad quoting.
  bool next(std::vector<std::string_view>& fields, const std::string& source);
  // The line the last record read began on (1-based).
  std::size_t line() const { return record_line_; }

 private:
  CsvFieldReader fields_;
  std::size_t record_line_ = 0;
  std::deque<std::string> undoubled_;  // this record's values that had doubled quotes
};

}  // namespace trib::data
