// A checkpoint shard's manifest entries as JSON: how a stage tells the chief, through the
// coordinator's store, what it wrote, so that the chief publishes one manifest for all stages.
#pragma once

#include <string>

#include "trib/checkpoint/checkpoint.h"

namespace trib::pipeline {

std::string shard_info_to_json(const ShardInfo& info);
ShardInfo shard_info_from_json(const std::string& text);

}  // namespace trib::pipeline
