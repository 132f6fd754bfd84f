// Tells a wrong schema from bad data. One record lacking a field is poison (dead-lettered, and
// training goes on); the first N records of a source all lacking the same field mean the
// schema names a field the topic does not have, and that is an error worth stopping for.
#pragma once

#include <cstdint>
#include <string>

#include "stream/record_decoder.h"

namespace trib::stream::detail {

class SchemaCheck {
 public:
  // records == 0 disables the check.
  SchemaCheck(std::int64_t records, std::string topic) : records_(records), topic_(std::move(topic)) {}

  // Called for each record decoded, in arrival order, with its error or null. Throws
  // InvalidArgument naming the field once the first `records` records all lack it.
  void observe(const DecodeError* error, std::int32_t partition, std::int64_t offset);

 private:
  std::int64_t records_;
  std::string topic_;
  bool done_ = false;        // decided: the schema fits at least one record, or check disabled
  std::int64_t missing_ = 0;  // records so far lacking `field_`
  std::string field_;
};

}  // namespace trib::stream::detail
