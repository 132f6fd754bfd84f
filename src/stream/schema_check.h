// Tells a wrong schema from bad data. One record that does not fit is poison (dead-lettered,
// and training goes on); the first N records of a source all failing the same way (the same
// missing field, the same label problem, all malformed) mean the schema does not fit the
// topic, and that is an error worth stopping for, before anything is dead-lettered or
// committed: so while the check is deciding, the source holds poison records back.
#pragma once

#include <cstdint>
#include <string>

#include "stream/record_decoder.h"

namespace trib::stream::detail {

class SchemaCheck {
 public:
  // records == 0 disables the check.
  SchemaCheck(std::int64_t records, std::string topic) : records_(records), topic_(std::move(topic)) {}

  // Until this is false, a poison record may be a symptom of a wrong schema: the source must
  // not dead-letter it (or move past it) yet.
  bool deciding() const { return !done_ && records_ > 0; }

  // Called for each record decoded, in arrival order, with its error or null. Throws
  // InvalidArgument naming the field (or the failure) once the first `records` records all
  // fail the same way.
  void observe(const DecodeError* error, std::int32_t partition, std::int64_t offset);

 private:
  std::int64_t records_;
  std::string topic_;
  bool done_ = false;        // decided: the schema fits at least one record, or check disabled
  std::int64_t failed_ = 0;  // records so far failing like `first_`
  DecodeError first_;
};

}  // namespace trib::stream::detail
