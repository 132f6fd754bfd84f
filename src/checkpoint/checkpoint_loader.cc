// Loading a checkpoint, trusting nothing: each shard's header is validated by the reader,
// then checked against the manifest, then every tensor's bytes against its CRC32C.
#include "checkpoint/layout.h"
#include "trib/checkpoint/checkpoint.h"

namespace trib {
namespace {

// Reads one shard into `out`, checking it against the manifest's entries for it.
void load_shard(const std::filesystem::path& dir, const Manifest& m, const ManifestShard& shard, TensorMap& out) {
  const std::filesystem::path path = dir / shard.file;
  const std::string where = fmt::format("checkpoint {}", path.string());
  std::optional<SafetensorsReader> reader;
  try {
    reader.emplace(path, "checkpoint");
  } catch (const NotFound&) {
    throw NotFound(fmt::format("{}: shard file is missing", where));
  }

  for (const SafetensorsEntry& e : reader->entries()) {
    auto it = m.tensors.find(e.name);
    TRIB_CHECK(it != m.tensors.end() && it->second.shard == shard.file, Corruption,
               "{}: tensor '{}' is in the file but not in the manifest", where, e.name);
    TRIB_CHECK(it->second.dtype == e.dtype && it->second.shape == e.shape, Corruption,
               "{}: tensor '{}' is {}{} in the file but {}{} in the manifest", where, e.name,
               safetensors_dtype_name(e.dtype), e.shape.to_string(), safetensors_dtype_name(it->second.dtype),
               it->second.shape.to_string());
  }
  for (const auto& [name, t] : m.tensors) {
    TRIB_CHECK(t.shard != shard.file || reader->find(name) != nullptr, Corruption,
               "{}: tensor '{}' is in the manifest but not in the file", where, name);
  }
  // After the header checks, so that a truncated file is reported as such; this catches
  // bytes appended after the data, which the header cannot see.
  TRIB_CHECK(reader->file_size() == shard.bytes, Corruption, "{}: file has {} bytes, the manifest says {}", where,
             reader->file_size(), shard.bytes);

  for (const SafetensorsEntry& e : reader->entries()) {
    std::uint32_t computed = 0;
    Tensor t = reader->read(e, &computed);
    const std::uint32_t stored = m.tensors.at(e.name).crc32c;
    TRIB_CHECK(computed == stored, Corruption,
               "{}: tensor '{}' fails its CRC32C check (stored 0x{:08x}, computed 0x{:08x})", where, e.name, stored,
               computed);
    out.emplace(e.name, std::move(t));
  }
}

}  // namespace

Checkpoint Checkpoint::load(const std::filesystem::path& dir) {
  Checkpoint c;
  c.dir_ = dir;
  c.manifest_ = checkpoint_detail::read_manifest(dir);
  // A directory copied or renamed to another step would resume at the wrong place.
  std::optional<std::int64_t> dir_step = checkpoint_detail::parse_checkpoint_dir_name(dir.filename().string());
  TRIB_CHECK(!dir_step || *dir_step == c.manifest_.step, Corruption,
             "checkpoint {}: the manifest says step {}, the directory name says {}", dir.string(), c.manifest_.step,
             dir_step.value_or(0));
  for (const ManifestShard& shard : c.manifest_.shards) load_shard(dir, c.manifest_, shard, c.tensors_);
  return c;
}

const Tensor& Checkpoint::tensor(std::string_view name) const {
  auto it = tensors_.find(std::string(name));
  TRIB_CHECK(it != tensors_.end(), NotFound, "checkpoint {}: no tensor '{}'", dir_.string(), name);
  return it->second;
}

TensorMap Checkpoint::tensors_with_prefix(std::string_view prefix) const {
  TensorMap out;
  for (auto it = tensors_.lower_bound(std::string(prefix)); it != tensors_.end() && it->first.starts_with(prefix); ++it) {
    out.emplace(it->first, it->second);
  }
  return out;
}

std::vector<TensorInfo> list_tensors(const std::filesystem::path& dir) {
  const Manifest m = checkpoint_detail::read_manifest(dir);
  std::vector<TensorInfo> out;
  for (const auto& [name, t] : m.tensors) {
    out.push_back({name, t.dtype, t.shape, static_cast<std::uint64_t>(t.shape.numel()) * dtype_size(t.dtype), t.shard,
                   t.crc32c});
  }
  return out;
}

}  // namespace trib
