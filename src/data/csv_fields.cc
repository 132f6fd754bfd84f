#include "data/csv_fields.h"

#include <fmt/format.h>

#include "trib/core/error.h"

namespace trib::data {

bool CsvFieldReader::next(CsvField& field) {
  field = CsvField{};
  while (pos_ < text_.size() && is_blank(text_[pos_])) ++pos_;
  if (pos_ < text_.size() && text_[pos_] == '"') return read_quoted(field);
  const std::size_t start = pos_;
  while (pos_ < text_.size() && text_[pos_] != delimiter_ && text_[pos_] != '\n') ++pos_;
  std::string_view value = text_.substr(start, pos_ - start);
  while (!value.empty() && (is_blank(value.back()) || value.back() == '\r')) value.remove_suffix(1);
  field.value = value;
  return finish(field);
}

bool CsvFieldReader::read_quoted(CsvField& field) {
  field.quoted = true;
  const std::size_t open_line = line_;
  const std::size_t start = ++pos_;
  bool doubled = false;
  for (;; ++pos_) {
    if (pos_ >= text_.size()) {
      error_ = fmt::format("the quoted field opened on line {} is not closed", open_line);
      return false;
    }
    if (text_[pos_] == '\n') ++line_;
    if (text_[pos_] != '"') continue;
    if (pos_ + 1 < text_.size() && text_[pos_ + 1] == '"') {
      doubled = true;
      ++pos_;
      continue;
    }
    break;
  }
  std::string_view raw = text_.substr(start, pos_ - start);
  ++pos_;  // the closing quote
  if (!doubled) {
    field.value = raw;
  } else {
    scratch_.clear();
    for (std::size_t i = 0; i < raw.size(); ++i) {
      scratch_ += raw[i];
      if (raw[i] == '"') ++i;  // the second of a pair
    }
    field.value = scratch_;
    field.undoubled = true;
  }
  while (pos_ < text_.size() && (is_blank(text_[pos_]) || text_[pos_] == '\r')) ++pos_;
  if (pos_ < text_.size() && text_[pos_] != delimiter_ && text_[pos_] != '\n') {
    error_ = fmt::format("'{}' follows a closing quote; expected '{}' or the end of the line", text_[pos_],
                         delimiter_);
    return false;
  }
  return finish(field);
}

bool CsvFieldReader::finish(CsvField& field) {
  if (pos_ >= text_.size()) {
    field.end = CsvField::End::text;
  } else if (text_[pos_] == delimiter_) {
    field.end = CsvField::End::delimiter;
    ++pos_;
  } else {  // '\n'
    field.end = CsvField::End::record;
    ++pos_;
    ++line_;
  }
  return true;
}

bool CsvRecordReader::next(std::vector<std::string_view>& fields, const std::string& source) {
  for (;;) {
    fields.clear();
    undoubled_.clear();
    if (fields_.at_end()) return false;
    record_line_ = fields_.line();
    bool any_quoted = false;
    CsvField f;
    do {
      if (!fields_.next(f)) throw Corruption(fmt::format("'{}':{}: {}", source, fields_.line(), fields_.error()));
      any_quoted |= f.quoted;
      // An undoubled value lies in the field reader's scratch, which its next field
      // overwrites: keep a copy (in a deque, so that earlier copies stay where they are).
      fields.push_back(f.undoubled ? std::string_view(undoubled_.emplace_back(f.value)) : f.value);
    } while (f.end == CsvField::End::delimiter);
    if (fields.size() == 1 && fields[0].empty() && !any_quoted) continue;  // a blank line
    return true;
  }
}

}  // namespace trib::data
