#include "trib/cluster/roster.h"

#include <nlohmann/json.hpp>

#include "trib/core/error.h"

namespace trib::cluster {

using json = nlohmann::json;

std::string roster_to_json(const RosterView& r) {
  json members = json::array(), lost = json::array();
  for (const RosterEntry& m : r.members)
    members.push_back({{"role", m.role}, {"index", m.index}, {"address", m.address}, {"incarnation", m.incarnation}});
  for (const LostEntry& l : r.lost)
    lost.push_back({{"role", l.role},
                    {"index", l.index},
                    {"incarnation", l.incarnation},
                    {"generation", l.generation},
                    {"reason", l.reason}});
  return json{{"generation", r.generation}, {"members", members}, {"lost", lost}}.dump();
}

RosterView roster_from_json(const std::string& text) {
  RosterView r;
  try {
    json j = json::parse(text);
    r.generation = j.at("generation").get<std::int64_t>();
    for (const json& m : j.at("members"))
      r.members.push_back({m.at("role").get<std::string>(), m.at("index").get<int>(),
                           m.at("address").get<std::string>(), m.at("incarnation").get<std::int64_t>()});
    for (const json& l : j.at("lost"))
      r.lost.push_back({l.at("role").get<std::string>(), l.at("index").get<int>(),
                        l.at("incarnation").get<std::int64_t>(), l.at("generation").get<std::int64_t>(),
                        l.at("reason").get<std::string>()});
  } catch (const json::exception& e) {
    throw InvalidArgument(fmt::format("membership roster: {}", e.what()));
  }
  return r;
}

}  // namespace trib::cluster
