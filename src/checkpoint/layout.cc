#include "checkpoint/layout.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "checkpoint/file_io.h"
#include "trib/core/error.h"

namespace trib::checkpoint_detail {

std::optional<std::int64_t> parse_checkpoint_dir_name(std::string_view name) {
  if (!name.starts_with(kDirPrefix)) return std::nullopt;
  std::string_view digits = name.substr(kDirPrefix.size());
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  std::int64_t step = 0;
  auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), step);
  if (ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return step;
}

bool is_plain_file_name(std::string_view name) {
  if (name.empty() || name.size() > 255 || name.front() == '.') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
  });
}

Manifest read_manifest(const std::filesystem::path& dir) {
  const std::filesystem::path path = dir / kManifestName;
  std::string text;
  try {
    text = read_whole_file(path);
  } catch (const NotFound&) {
    throw NotFound(fmt::format("checkpoint {}: no {}, so the checkpoint is incomplete", dir.string(), kManifestName));
  }
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw Corruption(fmt::format("checkpoint {}: not valid JSON (parse error at byte {})", path.string(), e.byte));
  }
  return Manifest::from_json(j, path.string());
}

}  // namespace trib::checkpoint_detail
