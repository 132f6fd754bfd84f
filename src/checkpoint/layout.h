// Names inside a checkpoint root, shared by the writer, the loader and the directory scans.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "trib/checkpoint/manifest.h"

namespace trib::checkpoint_detail {

inline constexpr std::string_view kDirPrefix = "ckpt-";
inline constexpr std::string_view kManifestName = "manifest.json";
inline constexpr std::string_view kShardSuffix = ".safetensors";

// The step of a directory named "ckpt-<step>" (decimal digits only), else nullopt.
std::optional<std::int64_t> parse_checkpoint_dir_name(std::string_view name);

// Letters, digits, '-', '_', '.'; not empty, not starting with '.', at most 255 bytes. Such a
// name cannot leave the directory it is joined to.
bool is_plain_file_name(std::string_view name);

// Reads and parses <dir>/manifest.json. Throws NotFound when it is missing (the checkpoint is
// incomplete), Corruption when it is not a valid manifest.
Manifest read_manifest(const std::filesystem::path& dir);

}  // namespace trib::checkpoint_detail
