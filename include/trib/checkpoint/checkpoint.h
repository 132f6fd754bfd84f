// Checkpoints: a directory <root>/ckpt-<step>/ holding safetensors shard files and, written
// last and atomically, manifest.json. A directory without a manifest is an incomplete write
// and is ignored. Loading verifies every byte (see docs/checkpoint_format.md).
//
//   TensorMap tensors = variables;        // e.g. a VariableStore's contents
//   tensors.merge(slots.to_tensors());    // optimizer slots: "slot/<var>/<slot>"
//   CheckpointWriter w(root, step);
//   w.add_shard("shard-0", tensors);
//   w.set_rng_state("trainer", rng.state());
//   w.publish();
//   ...
//   if (auto found = load_latest_valid(root)) { found->checkpoint.tensor("dense1/w"); ... }
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trib/checkpoint/manifest.h"
#include "trib/checkpoint/safetensors.h"

namespace trib {

// <root>/ckpt-<step>
std::filesystem::path checkpoint_dir(const std::filesystem::path& root, std::int64_t step);

// What writing one shard produced: the manifest entries for it. A shard written by another
// process (a parameter server, later) is reported to the writer that publishes with these.
struct ShardInfo {
  ManifestShard shard;
  std::map<std::string, ManifestTensor> tensors;
};

// Writes <checkpoint>/<shard_name>.safetensors atomically. Shard names are plain: letters,
// digits, '-', '_' and '.', not starting with '.'. Throws InvalidArgument for a bad name.
ShardInfo write_shard(const std::filesystem::path& checkpoint, const std::string& shard_name, const TensorMap& tensors);

class CheckpointWriter {
 public:
  // Creates <root>/ckpt-<step>/. A checkpoint of the same step already there loses its
  // manifest first, so it counts as incomplete until this one is published over it.
  CheckpointWriter(const std::filesystem::path& root, std::int64_t step);

  const std::filesystem::path& dir() const { return dir_; }

  // Writes a shard now and records its tensors for the manifest. Throws InvalidArgument if
  // the shard was already added or a tensor name is already in another shard.
  void add_shard(const std::string& shard_name, const TensorMap& tensors);
  // Records a shard some other writer put into dir() with write_shard.
  void add_written_shard(const ShardInfo& info);

  void set_epoch(std::int64_t epoch) { manifest_.epoch = epoch; }
  void set_rng_state(const std::string& name, const RngState& state) { manifest_.rng_states[name] = state; }
  void set_data_position(nlohmann::json position) { manifest_.data_position = std::move(position); }
  void set_section(const std::string& name, nlohmann::json value) { manifest_.sections[name] = std::move(value); }
  const Manifest& manifest() const { return manifest_; }

  // Writes manifest.json atomically, last; the checkpoint is complete once this returns.
  // Returns dir(). A writer publishes once.
  std::filesystem::path publish();

 private:
  std::filesystem::path root_;
  std::filesystem::path dir_;
  Manifest manifest_;
  bool published_ = false;
};

// A loaded, fully verified checkpoint.
class Checkpoint {
 public:
  // Reads the manifest and every shard, verifying the safetensors headers (lengths, JSON,
  // dtypes, shapes, offsets), the agreement of shards and manifest, file sizes, and the
  // CRC32C of every tensor. Throws NotFound (no manifest: an incomplete checkpoint; or a
  // missing shard), Corruption or IoError, each in one line naming the file and the tensor.
  static Checkpoint load(const std::filesystem::path& dir);

  const std::filesystem::path& dir() const { return dir_; }
  const Manifest& manifest() const { return manifest_; }
  std::int64_t step() const { return manifest_.step; }

  bool contains(std::string_view name) const { return tensors_.find(std::string(name)) != tensors_.end(); }
  // Throws NotFound naming the tensor and the checkpoint.
  const Tensor& tensor(std::string_view name) const;
  const TensorMap& tensors() const { return tensors_; }
  // Variable `name` whole, as a copy: its tensor, or the row slices that parameter servers
  // with a split placement wrote ("name@0", "name@392", ...) joined. Throws NotFound ("has no
  // tensor 'name' that the model needs") or Corruption (slices that do not tile it).
  Tensor variable(std::string_view name) const;
  // The tensors whose names start with `prefix` (for example "slot/" for optimizer slots).
  TensorMap tensors_with_prefix(std::string_view prefix) const;

 private:
  Checkpoint() = default;  // only load() makes one
  std::filesystem::path dir_;
  Manifest manifest_;
  TensorMap tensors_;
};

// A complete checkpoint under a root.
struct CheckpointRef {
  std::int64_t step = 0;
  std::filesystem::path dir;
};

// The complete checkpoints under `root` (those with a manifest), oldest first. Empty when
// `root` does not exist.
std::vector<CheckpointRef> list_checkpoints(const std::filesystem::path& root);

// The newest complete checkpoint's directory, if any. It is not verified; see load_latest_valid.
std::optional<std::filesystem::path> latest_checkpoint(const std::filesystem::path& root);

// Deletes all but the newest `keep` complete checkpoints, and incomplete ones older than the
// oldest kept (debris of crashed writes; newer incomplete ones may be being written now).
// Each goes manifest first, so a crash mid-way leaves an incomplete directory, never a
// complete-looking damaged one. Returns the directories removed. Throws InvalidArgument if keep < 1.
std::vector<std::filesystem::path> keep_last(const std::filesystem::path& root, std::size_t keep);

struct ValidCheckpoint {
  Checkpoint checkpoint;
  // One line per newer complete checkpoint that failed to load, saying why, newest first.
  std::vector<std::string> skipped;
};

// Loads the newest complete checkpoint that verifies, falling back past corrupt ones and
// reporting them. Returns nullopt when there is no complete checkpoint at all (a fresh start).
// Throws Corruption listing the reasons when every complete checkpoint is corrupt: starting
// over silently would throw the training away.
std::optional<ValidCheckpoint> load_latest_valid(const std::filesystem::path& root);

// One tensor as the manifest describes it, for `trib inspect`.
struct TensorInfo {
  std::string name;
  DType dtype = DType::f32;
  Shape shape;
  std::uint64_t bytes = 0;
  std::string shard;
  std::uint32_t crc32c = 0;
};

// The checkpoint's tensors by name, from its manifest alone (no shard is read).
// Throws NotFound or Corruption for a missing or bad manifest.
std::vector<TensorInfo> list_tensors(const std::filesystem::path& dir);

}  // namespace trib
