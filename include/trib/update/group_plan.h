// Where an allreduce job's leader announces the next group in the coordinator's store, and its
// form. The group's membership (app/allreduce_membership.cc) writes it; a stream job's barriers
// and rollback (train_stream/) read it to follow the group. Nothing else spells the key.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace trib::update {

inline constexpr const char* kGroupPlanKey = "allreduce/plan";

// The leader's decision: the group of `generation` is `workers` (indices; rank = position).
struct GroupPlan {
  std::int64_t generation = 0;
  std::vector<int> workers;
};

inline std::string encode_group_plan(const GroupPlan& plan) {
  return nlohmann::json{{"generation", plan.generation}, {"workers", plan.workers}}.dump();
}

// The plan in `text`; nullopt when there is none yet (empty) or the text is not a plan.
inline std::optional<GroupPlan> parse_group_plan(const std::string& text) {
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (!j.is_object() || !j.value("generation", nlohmann::json()).is_number_integer() ||
      !j.value("workers", nlohmann::json()).is_array())
    return std::nullopt;
  try {
    return GroupPlan{j["generation"].get<std::int64_t>(), j["workers"].get<std::vector<int>>()};
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;  // workers that are not indices
  }
}

}  // namespace trib::update
