#include "pipeline/shard_info_json.h"

#include <nlohmann/json.hpp>

namespace trib::pipeline {

std::string shard_info_to_json(const ShardInfo& info) {
  nlohmann::json j{{"file", info.shard.file}, {"bytes", info.shard.bytes}, {"tensors", nlohmann::json::object()}};
  for (const auto& [name, t] : info.tensors)
    j["tensors"][name] = {{"dtype", std::string(dtype_name(t.dtype))}, {"shape", t.shape.dims()}, {"crc32c", t.crc32c}};
  return j.dump();
}

ShardInfo shard_info_from_json(const std::string& text) {
  ShardInfo info;
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    info.shard.file = j.at("file").get<std::string>();
    info.shard.bytes = j.at("bytes").get<std::uint64_t>();
    for (const auto& [name, t] : j.at("tensors").items())
      info.tensors[name] = {info.shard.file, parse_dtype(t.at("dtype").get<std::string>()),
                            Shape(t.at("shape").get<std::vector<std::int64_t>>()), t.at("crc32c").get<std::uint32_t>()};
  } catch (const nlohmann::json::exception& e) {
    throw Corruption(fmt::format("pipeline checkpoint: a stage's shard report is not valid: {}", e.what()));
  }
  return info;
}

}  // namespace trib::pipeline
