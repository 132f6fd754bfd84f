// Reading safetensors files. Everything the header claims is checked against the file before
// it is trusted: lengths before allocation, offsets before reads.
#include <algorithm>

#include <nlohmann/json.hpp>

#include "checkpoint/file_io.h"
#include "checkpoint/crc32c.h"
#include "trib/checkpoint/safetensors.h"

namespace trib {

struct SafetensorsReader::Impl {
  checkpoint_detail::File file;
  std::string where;  // "<label> <path>", the start of every error message
  std::uint64_t size = 0;
  std::uint64_t data_start = 0;
};

namespace {

using nlohmann::json;

// Validates one tensor's header entry and returns it.
SafetensorsEntry parse_entry(const std::string& where, const std::string& name, const json& v) {
  TRIB_CHECK(v.is_object(), Corruption, "{}: tensor '{}' has a header entry that is not an object", where, name);
  auto dtype_it = v.find("dtype");
  TRIB_CHECK(dtype_it != v.end() && dtype_it->is_string(), Corruption, "{}: tensor '{}' has no dtype string", where,
             name);
  std::optional<DType> dtype = parse_safetensors_dtype(dtype_it->get_ref<const std::string&>());
  TRIB_CHECK(dtype.has_value(), Corruption, "{}: tensor '{}' has dtype '{}'; only F32, I32 and I64 are supported",
             where, name, dtype_it->get_ref<const std::string&>());

  auto shape_it = v.find("shape");
  TRIB_CHECK(shape_it != v.end() && shape_it->is_array() && shape_it->size() <= Shape::kMaxRank, Corruption,
             "{}: tensor '{}' has no shape array of at most {} dimensions", where, name, Shape::kMaxRank);
  std::vector<std::int64_t> dims;
  std::int64_t numel = 1;
  for (const json& d : *shape_it) {
    TRIB_CHECK(d.is_number_unsigned(), Corruption, "{}: tensor '{}' has a shape entry that is not a non-negative integer",
               where, name);
    const std::uint64_t dim = d.get<std::uint64_t>();
    // Division keeps the overflow check itself from overflowing.
    TRIB_CHECK(dim == 0 || static_cast<std::uint64_t>(numel) <= static_cast<std::uint64_t>(Shape::kMaxElements) / dim,
               Corruption, "{}: tensor '{}' claims more than 2^48 elements", where, name);
    numel *= static_cast<std::int64_t>(dim);
    dims.push_back(static_cast<std::int64_t>(dim));
  }

  auto off_it = v.find("data_offsets");
  TRIB_CHECK(off_it != v.end() && off_it->is_array() && off_it->size() == 2 && (*off_it)[0].is_number_unsigned() &&
                 (*off_it)[1].is_number_unsigned(),
             Corruption, "{}: tensor '{}' has no data_offsets pair of non-negative integers", where, name);
  SafetensorsEntry e{name, *dtype, Shape(std::move(dims)), (*off_it)[0].get<std::uint64_t>(),
                     (*off_it)[1].get<std::uint64_t>()};
  TRIB_CHECK(e.begin <= e.end, Corruption, "{}: tensor '{}' has reversed data_offsets [{}, {}]", where, name, e.begin,
             e.end);
  const std::uint64_t expected = static_cast<std::uint64_t>(numel) * dtype_size(e.dtype);
  TRIB_CHECK(e.bytes() == expected, Corruption,
             "{}: tensor '{}' is {}{} ({} bytes) but its data_offsets [{}, {}] span {} bytes", where, name,
             safetensors_dtype_name(e.dtype), e.shape.to_string(), expected, e.begin, e.end, e.bytes());
  return e;
}

std::map<std::string, std::string> parse_metadata(const std::string& where, const json& v) {
  TRIB_CHECK(v.is_object(), Corruption, "{}: '__metadata__' is not an object", where);
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : v.items()) {
    TRIB_CHECK(value.is_string(), Corruption, "{}: '__metadata__' entry '{}' is not a string", where, key);
    out.emplace(key, value.get<std::string>());
  }
  return out;
}

}  // namespace

SafetensorsReader::SafetensorsReader(const std::filesystem::path& path, std::string label)
    : impl_(std::make_unique<Impl>(Impl{checkpoint_detail::File::open_for_reading(path),
                                        fmt::format("{} {}", label, path.string())})) {
  const std::string& where = impl_->where;
  impl_->size = impl_->file.size();
  const std::uint64_t size = impl_->size;
  TRIB_CHECK(size >= 8, Corruption, "{}: file is truncated ({} bytes, shorter than the 8-byte header length)", where,
             size);
  unsigned char length_bytes[8];
  impl_->file.read_at(length_bytes, 8, 0);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | length_bytes[i];
  // Both checks come before the header is allocated, so a corrupt length costs nothing.
  TRIB_CHECK(n <= size - 8, Corruption, "{}: file is truncated or corrupt (header length {} exceeds the {} bytes after it)",
             where, n, size - 8);
  TRIB_CHECK(n <= kMaxHeaderBytes, Corruption, "{}: header length {} exceeds the {}-byte limit", where, n,
             kMaxHeaderBytes);
  impl_->data_start = 8 + n;

  std::string text(n, '\0');
  if (n > 0) impl_->file.read_at(text.data(), n, 8);
  json header;
  try {
    header = json::parse(text);
  } catch (const json::parse_error& e) {
    throw Corruption(fmt::format("{}: header is not valid JSON (parse error at byte {})", where, e.byte));
  }
  TRIB_CHECK(header.is_object(), Corruption, "{}: header is not a JSON object", where);

  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      metadata_ = parse_metadata(where, value);
    } else {
      entries_.push_back(parse_entry(where, key, value));
    }
  }

  const std::uint64_t data_size = size - impl_->data_start;
  std::uint64_t max_end = 0;
  for (const SafetensorsEntry& e : entries_) max_end = std::max(max_end, e.end);
  TRIB_CHECK(max_end <= data_size, Corruption, "{}: file is truncated (header says {} bytes of data, file has {})", where,
             max_end, data_size);

  std::vector<const SafetensorsEntry*> by_offset;
  for (const SafetensorsEntry& e : entries_) {
    if (e.bytes() > 0) by_offset.push_back(&e);  // an empty tensor occupies nothing
  }
  std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->begin < b->begin; });
  for (std::size_t i = 1; i < by_offset.size(); ++i) {
    const SafetensorsEntry& a = *by_offset[i - 1];
    const SafetensorsEntry& b = *by_offset[i];
    TRIB_CHECK(b.begin >= a.end, Corruption, "{}: tensors '{}' and '{}' overlap (data_offsets [{}, {}] and [{}, {}])",
               where, a.name, b.name, a.begin, a.end, b.begin, b.end);
  }
}

SafetensorsReader::~SafetensorsReader() = default;
SafetensorsReader::SafetensorsReader(SafetensorsReader&&) noexcept = default;
SafetensorsReader& SafetensorsReader::operator=(SafetensorsReader&&) noexcept = default;

const std::filesystem::path& SafetensorsReader::path() const { return impl_->file.path(); }
std::uint64_t SafetensorsReader::file_size() const { return impl_->size; }

const SafetensorsEntry* SafetensorsReader::find(std::string_view name) const {
  auto it = std::lower_bound(entries_.begin(), entries_.end(), name,
                             [](const SafetensorsEntry& e, std::string_view n) { return e.name < n; });
  return it != entries_.end() && it->name == name ? &*it : nullptr;
}

Tensor SafetensorsReader::read(const SafetensorsEntry& entry, std::uint32_t* crc) const {
  Tensor t = Tensor::empty(entry.dtype, entry.shape);
  if (entry.bytes() > 0) impl_->file.read_at(t.raw_data(), entry.bytes(), impl_->data_start + entry.begin);
  if (crc != nullptr) *crc = crc32c(t.raw_data(), entry.bytes());
  return t;
}

TensorMap SafetensorsReader::read_all() const {
  TensorMap out;
  for (const SafetensorsEntry& e : entries_) out.emplace(e.name, read(e));
  return out;
}

}  // namespace trib
