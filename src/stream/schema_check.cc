#include "stream/schema_check.h"

#include "trib/core/error.h"

namespace trib::stream::detail {

void SchemaCheck::observe(const DecodeError* error, std::int32_t partition, std::int64_t offset) {
  if (done_ || records_ <= 0) return;
  const bool same_missing = error != nullptr && error->kind == DecodeError::Kind::missing_field &&
                            (missing_ == 0 || error->field == field_);
  if (!same_missing) {
    done_ = true;
    return;
  }
  field_ = error->field;
  if (++missing_ < records_) return;
  done_ = true;
  throw InvalidArgument(fmt::format(
      "schema names field '{}', but none of the first {} records of topic '{}' has it (the latest: partition {} "
      "offset {}); check the schema's field names against the records",
      field_, records_, topic_, partition, offset));
}

}  // namespace trib::stream::detail
