// Operations over a root of checkpoints: finding the newest, falling back past corrupt ones,
// and garbage-collecting old ones.
#include <algorithm>
#include <system_error>

#include "checkpoint/file_io.h"
#include "checkpoint/layout.h"
#include "trib/checkpoint/checkpoint.h"

namespace trib {
namespace {

struct Scanned {
  std::vector<CheckpointRef> complete;
  std::vector<CheckpointRef> incomplete;
};

Scanned scan(const std::filesystem::path& root) {
  Scanned s;
  std::error_code ec;
  if (!std::filesystem::is_directory(root, ec)) return s;
  std::filesystem::directory_iterator it(root, ec);
  if (ec) throw IoError(fmt::format("cannot list checkpoint root {}: {}", root.string(), ec.message()));
  for (const std::filesystem::directory_entry& entry : it) {
    if (!entry.is_directory(ec)) continue;
    std::optional<std::int64_t> step = checkpoint_detail::parse_checkpoint_dir_name(entry.path().filename().string());
    if (!step) continue;
    const bool complete = std::filesystem::is_regular_file(entry.path() / checkpoint_detail::kManifestName, ec);
    (complete ? s.complete : s.incomplete).push_back({*step, entry.path()});
  }
  auto by_step = [](const CheckpointRef& a, const CheckpointRef& b) { return a.step < b.step; };
  std::sort(s.complete.begin(), s.complete.end(), by_step);
  std::sort(s.incomplete.begin(), s.incomplete.end(), by_step);
  return s;
}

void remove_checkpoint(const std::filesystem::path& dir) {
  std::error_code ec;
  // The manifest goes first and durably, so a crash part-way leaves an incomplete
  // checkpoint (ignored) rather than a complete-looking one with files missing.
  if (std::filesystem::remove(dir / checkpoint_detail::kManifestName, ec)) checkpoint_detail::sync_directory(dir);
  if (!ec) std::filesystem::remove_all(dir, ec);
  if (ec) throw IoError(fmt::format("cannot remove checkpoint {}: {}", dir.string(), ec.message()));
}

}  // namespace

std::vector<CheckpointRef> list_checkpoints(const std::filesystem::path& root) { return scan(root).complete; }

std::optional<std::filesystem::path> latest_checkpoint(const std::filesystem::path& root) {
  std::vector<CheckpointRef> complete = list_checkpoints(root);
  if (complete.empty()) return std::nullopt;
  return complete.back().dir;
}

std::vector<std::filesystem::path> keep_last(const std::filesystem::path& root, std::size_t keep) {
  TRIB_CHECK(keep >= 1, InvalidArgument, "keep_last({}): keeping no checkpoint would delete them all",
             root.string());
  Scanned s = scan(root);
  std::vector<std::filesystem::path> removed;
  if (s.complete.empty()) return removed;  // an incomplete one may be the first being written
  const std::size_t drop = s.complete.size() > keep ? s.complete.size() - keep : 0;
  const std::int64_t oldest_kept = s.complete[drop].step;
  for (std::size_t i = 0; i < drop; ++i) {
    remove_checkpoint(s.complete[i].dir);
    removed.push_back(s.complete[i].dir);
  }
  for (const CheckpointRef& c : s.incomplete) {
    if (c.step >= oldest_kept) continue;
    remove_checkpoint(c.dir);
    removed.push_back(c.dir);
  }
  checkpoint_detail::sync_directory(root);
  return removed;
}

std::optional<ValidCheckpoint> load_latest_valid(const std::filesystem::path& root) {
  std::vector<CheckpointRef> complete = list_checkpoints(root);
  if (complete.empty()) return std::nullopt;
  std::vector<std::string> skipped;
  for (auto it = complete.rbegin(); it != complete.rend(); ++it) {
    try {
      return ValidCheckpoint{Checkpoint::load(it->dir), std::move(skipped)};
    } catch (const Corruption& e) {
      skipped.emplace_back(e.what());
    } catch (const NotFound& e) {
      skipped.emplace_back(e.what());  // a missing shard; or the manifest vanished under us
    }
    // IoError is not caught: a failing disk or a permission problem is not a reason to
    // quietly resume from an older checkpoint.
  }
  throw Corruption(fmt::format("no valid checkpoint under {}: all {} complete checkpoints fail to load; the newest: {}",
                               root.string(), complete.size(), skipped.front()));
}

}  // namespace trib
