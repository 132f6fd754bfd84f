// Writing a checkpoint: shards first, each atomically, then the manifest, atomically, last.
#include <system_error>

#include "checkpoint/file_io.h"
#include "checkpoint/layout.h"
#include "trib/checkpoint/checkpoint.h"

namespace trib {

std::filesystem::path checkpoint_dir(const std::filesystem::path& root, std::int64_t step) {
  TRIB_CHECK(step >= 0, InvalidArgument, "checkpoint step {} is negative", step);
  return root / fmt::format("{}{}", checkpoint_detail::kDirPrefix, step);
}

ShardInfo write_shard(const std::filesystem::path& checkpoint, const std::string& shard_name, const TensorMap& tensors) {
  TRIB_CHECK(checkpoint_detail::is_plain_file_name(shard_name), InvalidArgument,
             "checkpoint {}: shard name '{}' must be letters, digits, '-', '_' or '.', not starting with '.'",
             checkpoint.string(), shard_name);
  ShardInfo info;
  info.shard.file = shard_name + std::string(checkpoint_detail::kShardSuffix);
  const std::filesystem::path path = checkpoint / info.shard.file;
  std::map<std::string, std::uint32_t> crcs =
      write_safetensors(path, tensors, {{"writer", "tributary"}, {"shard", shard_name}});
  std::error_code ec;
  info.shard.bytes = std::filesystem::file_size(path, ec);
  if (ec) throw IoError(fmt::format("cannot stat {}: {}", path.string(), ec.message()));
  for (const auto& [name, t] : tensors) info.tensors[name] = {info.shard.file, t.dtype(), t.shape(), crcs.at(name)};
  return info;
}

CheckpointWriter::CheckpointWriter(const std::filesystem::path& root, std::int64_t step)
    : root_(root), dir_(checkpoint_dir(root, step)) {
  manifest_.step = step;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) throw IoError(fmt::format("cannot create checkpoint directory {}: {}", dir_.string(), ec.message()));
  const std::filesystem::path old_manifest = dir_ / checkpoint_detail::kManifestName;
  if (std::filesystem::remove(old_manifest, ec)) checkpoint_detail::sync_directory(dir_);
  if (ec) throw IoError(fmt::format("cannot remove {}: {}", old_manifest.string(), ec.message()));
}

void CheckpointWriter::add_shard(const std::string& shard_name, const TensorMap& tensors) {
  TRIB_CHECK(!published_, InvalidArgument, "checkpoint {}: already published", dir_.string());
  // Checked before writing, so a rejected shard leaves no file behind.
  const std::string file = shard_name + std::string(checkpoint_detail::kShardSuffix);
  for (const ManifestShard& s : manifest_.shards) {
    TRIB_CHECK(s.file != file, InvalidArgument, "checkpoint {}: shard '{}' was already added", dir_.string(),
               shard_name);
  }
  for (const auto& [name, t] : tensors) {
    auto it = manifest_.tensors.find(name);
    TRIB_CHECK(it == manifest_.tensors.end(), InvalidArgument,
               "checkpoint {}: tensor '{}' is in both {} and {}", dir_.string(), name, it->second.shard, file);
  }
  add_written_shard(write_shard(dir_, shard_name, tensors));
}

void CheckpointWriter::add_written_shard(const ShardInfo& info) {
  TRIB_CHECK(!published_, InvalidArgument, "checkpoint {}: already published", dir_.string());
  for (const ManifestShard& s : manifest_.shards) {
    TRIB_CHECK(s.file != info.shard.file, InvalidArgument, "checkpoint {}: shard file {} was already added",
               dir_.string(), info.shard.file);
  }
  for (const auto& [name, t] : info.tensors) {
    auto it = manifest_.tensors.find(name);
    TRIB_CHECK(it == manifest_.tensors.end(), InvalidArgument,
               "checkpoint {}: tensor '{}' is in both {} and {}", dir_.string(), name, it->second.shard,
               info.shard.file);
  }
  manifest_.shards.push_back(info.shard);
  manifest_.tensors.insert(info.tensors.begin(), info.tensors.end());
}

std::filesystem::path CheckpointWriter::publish() {
  TRIB_CHECK(!published_, InvalidArgument, "checkpoint {}: already published", dir_.string());
  const std::string text = manifest_.to_json().dump(2) + "\n";
  checkpoint_detail::write_atomically(dir_ / checkpoint_detail::kManifestName, [&](checkpoint_detail::File& f) {
    f.write_all(text.data(), text.size());
  });
  // The checkpoint directory's own entry in the root must be durable too.
  checkpoint_detail::sync_directory(root_.empty() ? std::filesystem::path(".") : root_);
  published_ = true;
  return dir_;
}

}  // namespace trib
