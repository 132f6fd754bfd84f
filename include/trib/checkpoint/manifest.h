// The checkpoint manifest: everything about a checkpoint except the tensor bytes. It is the
// last file written and its presence is what makes a checkpoint complete. docs/checkpoint_format.md
// shows the JSON.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "trib/core/dtype.h"
#include "trib/core/random.h"
#include "trib/core/shape.h"

namespace trib {

// Where a tensor lives and what it must look like when read back.
struct ManifestTensor {
  std::string shard;  // file name of the shard, e.g. "shard-0.safetensors"
  DType dtype = DType::f32;
  Shape shape;
  std::uint32_t crc32c = 0;  // of the tensor's raw bytes
};

struct ManifestShard {
  std::string file;        // a plain file name inside the checkpoint directory
  std::uint64_t bytes = 0;  // the file's exact size
};

struct Manifest {
  static constexpr std::string_view kFormat = "tributary-checkpoint";
  static constexpr int kFormatVersion = 1;

  int format_version = kFormatVersion;
  std::int64_t step = 0;
  std::int64_t epoch = 0;
  std::map<std::string, RngState> rng_states;
  // Where the input pipeline was, as its owner encoded it; null when not given.
  nlohmann::json data_position;
  // Named opaque sections for other subsystems (for example Kafka offsets).
  std::map<std::string, nlohmann::json> sections;
  std::vector<ManifestShard> shards;
  std::map<std::string, ManifestTensor> tensors;

  nlohmann::json to_json() const;
  // Throws Corruption, naming `source` (the manifest's path) and the field at fault.
  static Manifest from_json(const nlohmann::json& j, std::string_view source);
};

}  // namespace trib
