// The safetensors file format (huggingface/safetensors), so that standard tools read our
// checkpoints: an 8-byte little-endian header length N, N bytes of JSON
//   {"<name>": {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin, end]}, ...,
//    "__metadata__": {"<key>": "<value>"}}
// padded with spaces to a multiple of 8, then the tensors' raw little-endian bytes, with
// offsets relative to the end of the header. We write tensors contiguously in name order.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trib/core/tensor.h"

namespace trib {

using TensorMap = std::map<std::string, Tensor>;

// "F32", "I32", "I64".
std::string_view safetensors_dtype_name(DType dtype);
std::optional<DType> parse_safetensors_dtype(std::string_view name);

// One tensor's header entry; begin and end are byte offsets relative to the data section.
struct SafetensorsEntry {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
  std::uint64_t bytes() const { return end - begin; }
};

// Writes `tensors` to `path` atomically (temporary file, fsync, rename, fsync directory) and
// returns the CRC32C of each tensor's bytes. Throws InvalidArgument for an undefined tensor or
// an unusable name (empty, "__metadata__", control characters), IoError if writing fails.
std::map<std::string, std::uint32_t> write_safetensors(const std::filesystem::path& path, const TensorMap& tensors,
                                                       const std::map<std::string, std::string>& metadata = {});

// An open safetensors file whose header has been read and validated: the header length fits
// the file (checked before anything is allocated), the JSON is well formed, every dtype and
// shape is supported and matches its byte count, and the offsets lie inside the file without
// overlapping. Errors are Corruption (or NotFound / IoError) with one-line messages starting
// "<label> <path>: ", naming the tensor where one is at fault.
class SafetensorsReader {
 public:
  // Headers larger than this are rejected as corrupt (the reference implementation's limit).
  static constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

  explicit SafetensorsReader(const std::filesystem::path& path, std::string label = "safetensors file");
  ~SafetensorsReader();
  SafetensorsReader(SafetensorsReader&&) noexcept;
  SafetensorsReader& operator=(SafetensorsReader&&) noexcept;

  const std::filesystem::path& path() const;
  std::uint64_t file_size() const;
  // Sorted by name.
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  // Null if there is no such tensor.
  const SafetensorsEntry* find(std::string_view name) const;

  // Reads one tensor into new memory; when `crc` is given, stores the CRC32C of its bytes there.
  Tensor read(const SafetensorsEntry& entry, std::uint32_t* crc = nullptr) const;
  // Every tensor.
  TensorMap read_all() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace trib
