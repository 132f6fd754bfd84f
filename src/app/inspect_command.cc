#include <filesystem>

#include "app/commands.h"
#include "trib/checkpoint/checkpoint.h"

namespace trib::app {

namespace fs = std::filesystem;

int run_inspect(const std::string& path_text) {
  fs::path path = path_text;
  if (!fs::exists(path / "manifest.json")) {
    // A run directory or a checkpoints root: show the newest complete checkpoint.
    for (const fs::path& root : {path / "checkpoints", path})
      if (auto latest = latest_checkpoint(root)) {
        path = *latest;
        break;
      }
  }
  std::vector<TensorInfo> tensors = list_tensors(path);
  Checkpoint ckpt = Checkpoint::load(path);  // verifies every CRC32C too
  const Manifest& m = ckpt.manifest();
  fmt::print("checkpoint {}\n  step {}  epoch {}  format version {}\n", path.string(), m.step, m.epoch,
             m.format_version);
  for (const ManifestShard& s : m.shards) fmt::print("  shard {} ({} bytes)\n", s.file, s.bytes);
  if (!m.data_position.is_null() && m.data_position.contains("summary"))
    fmt::print("  data position: {}\n", m.data_position["summary"].get<std::string>());
  for (const auto& [name, section] : m.sections) fmt::print("  section {}: {}\n", name, section.dump());
  fmt::print("\n{:<40} {:<5} {:<20} {:>12} {:<24} {}\n", "tensor", "dtype", "shape", "bytes", "shard", "crc32c");
  std::uint64_t total = 0;
  for (const TensorInfo& t : tensors) {
    fmt::print("{:<40} {:<5} {:<20} {:>12} {:<24} {:08x}\n", t.name, dtype_name(t.dtype), t.shape.to_string(),
               t.bytes, t.shard, t.crc32c);
    total += t.bytes;
  }
  fmt::print("{} tensors, {} bytes, all checksums verified\n", tensors.size(), total);
  return 0;
}

}  // namespace trib::app
