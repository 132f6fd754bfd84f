// Writing safetensors files, and the dtype names shared with the reader.
#include <bit>

#include <nlohmann/json.hpp>

#include "checkpoint/file_io.h"
#include "checkpoint/crc32c.h"
#include "trib/checkpoint/safetensors.h"

namespace trib {

static_assert(std::endian::native == std::endian::little,
              "safetensors stores little-endian data; tensors are written from memory as they are");

std::string_view safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case DType::f32: return "F32";
    case DType::i32: return "I32";
    case DType::i64: return "I64";
  }
  return "?";
}

std::optional<DType> parse_safetensors_dtype(std::string_view name) {
  if (name == "F32") return DType::f32;
  if (name == "I32") return DType::i32;
  if (name == "I64") return DType::i64;
  return std::nullopt;
}

std::map<std::string, std::uint32_t> write_safetensors(const std::filesystem::path& path, const TensorMap& tensors,
                                                       const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  std::uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    TRIB_CHECK(!name.empty() && name != "__metadata__", InvalidArgument,
               "safetensors file {}: '{}' cannot be a tensor name", path.string(), name);
    for (char c : name) {
      TRIB_CHECK(static_cast<unsigned char>(c) >= 0x20, InvalidArgument,
                 "safetensors file {}: tensor name '{}' contains a control character", path.string(), name);
    }
    TRIB_CHECK(t.defined(), InvalidArgument, "safetensors file {}: tensor '{}' is undefined", path.string(), name);
    header[name] = {{"dtype", safetensors_dtype_name(t.dtype())},
                    {"shape", t.shape().dims()},
                    {"data_offsets", {offset, offset + t.nbytes()}}};
    offset += t.nbytes();
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;

  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception&) {
    throw InvalidArgument(fmt::format("safetensors file {}: a tensor name or metadata string is not valid UTF-8",
                                      path.string()));
  }
  // Padding the header to a multiple of 8 keeps the data 8-byte aligned for readers that map
  // the file; trailing spaces are valid JSON and part of the standard format.
  text.append((8 - text.size() % 8) % 8, ' ');
  unsigned char length[8];
  for (int i = 0; i < 8; ++i) length[i] = static_cast<unsigned char>(static_cast<std::uint64_t>(text.size()) >> (8 * i));

  std::map<std::string, std::uint32_t> crcs;
  checkpoint_detail::write_atomically(path, [&](checkpoint_detail::File& f) {
    f.write_all(length, sizeof length);
    f.write_all(text.data(), text.size());
    for (const auto& [name, t] : tensors) {
      crcs[name] = crc32c(t.raw_data(), t.nbytes());
      if (t.nbytes() > 0) f.write_all(t.raw_data(), t.nbytes());
    }
  });
  return crcs;
}

}  // namespace trib
