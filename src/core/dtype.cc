#include "trib/core/dtype.h"

#include "trib/core/error.h"

namespace trib {

DType parse_dtype(std::string_view name) {
  if (name == "f32" || name == "float32") return DType::f32;
  if (name == "i32" || name == "int32") return DType::i32;
  if (name == "i64" || name == "int64") return DType::i64;
  throw InvalidArgument(fmt::format("unknown dtype '{}': expected f32, i32 or i64", name));
}

}  // namespace trib
