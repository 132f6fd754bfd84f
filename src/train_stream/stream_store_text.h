// The text forms StreamSync keeps in the coordinator's store (stream_sync.cc, stream_returns.cc).
#pragma once

#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "train/training_state.h"
#include "trib/data/data_position.h"

namespace trib::train_stream::store_text {

// A position travels in its manifest form (training_state.h), whose reader validates it.
inline std::string encode(const data::DataPosition& p) { return train::data_position_to_json(p).dump(); }
inline data::DataPosition decode(const std::string& text) {
  return train::data_position_from_json(nlohmann::json::parse(text));
}

// Where worker `w`'s claim goes when it leaves the job for good (StreamSync::leave).
inline std::string gone_key(int w) { return fmt::format("stream/gone/{}", w); }

}  // namespace trib::train_stream::store_text
