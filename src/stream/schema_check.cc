#include "stream/schema_check.h"

#include "trib/core/error.h"

namespace trib::stream::detail {

namespace {

// Two failures are "the same way" when they concern the same field (missing, not a number,
// a label out of range), or are both malformed records.
bool same_way(const DecodeError& a, const DecodeError& b) {
  if (a.kind == DecodeError::Kind::malformed || b.kind == DecodeError::Kind::malformed) return a.kind == b.kind;
  return a.field == b.field;
}

}  // namespace

void SchemaCheck::observe(const DecodeError* error, std::int32_t partition, std::int64_t offset) {
  if (!deciding()) return;
  if (error == nullptr || (failed_ > 0 && !same_way(*error, first_))) {
    done_ = true;
    return;
  }
  if (failed_ == 0) first_ = *error;
  if (++failed_ < records_) return;
  done_ = true;
  if (first_.kind == DecodeError::Kind::missing_field)
    throw InvalidArgument(fmt::format(
        "schema names field '{}', but none of the first {} records of topic '{}' has it (the latest: partition {} "
        "offset {}); check the schema's field names against the records",
        first_.field, records_, topic_, partition, offset));
  if (first_.kind == DecodeError::Kind::malformed)
    throw InvalidArgument(fmt::format(
        "none of the first {} records of topic '{}' can be read ({}; the latest: partition {} offset {}); "
        "check the schema's format (json|csv) and csv_columns against the records",
        records_, topic_, error->message, partition, offset));
  throw InvalidArgument(fmt::format(
      "schema field '{}' fits none of the first {} records of topic '{}' ({}; the latest: partition {} offset "
      "{}); check the schema's features and label against the records",
      first_.field, records_, topic_, error->message, partition, offset));
}

}  // namespace trib::stream::detail
