#include "cluster/coordinator_journal.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "trib/core/error.h"

namespace trib::cluster {

using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr int kVersion = 1;

// Written by the members during the job and read by others after a restart. Stream
// positions ("stream/pos/...", one per step) are left out: they are rewritten every step.
constexpr const char* kPrefixes[] = {"cluster/", "ps/", "allreduce/", "member/", "left/", "next/",
                                     "membership/lost/", "job/", "train/resume_position"};

}  // namespace

bool journaled_key(const std::string& key) {
  for (const char* p : kPrefixes)
    if (key.starts_with(p)) return true;
  return false;
}

std::string journal_text(const JournalState& s) {
  json members = json::array(), taken = json::object();
  for (const RosterEntry& m : s.members)
    members.push_back({{"role", m.role}, {"index", m.index}, {"address", m.address}, {"incarnation", m.incarnation}});
  for (const auto& [role, indices] : s.taken) taken[role] = indices;
  RosterView lost;
  lost.lost = s.lost;
  json j = {{"version", kVersion},
            {"job_yaml", s.job_yaml},
            {"ended", s.ended},
            {"generation", s.generation},
            {"members", members},
            {"lost", json::parse(roster_to_json(lost)).at("lost")},
            {"taken", taken},
            {"workers_left", s.workers_left},
            {"store", s.store}};
  return j.dump();
}

JournalState parse_journal(const std::string& text, const std::string& where) {
  JournalState s;
  try {
    json j = json::parse(text);
    TRIB_CHECK(j.at("version").get<int>() == kVersion, InvalidArgument, "version {}, expected {}",
               j.at("version").get<int>(), kVersion);
    s.job_yaml = j.at("job_yaml").get<std::string>();
    s.ended = j.at("ended").get<bool>();
    s.generation = j.at("generation").get<std::int64_t>();
    RosterView r = roster_from_json(json{{"generation", s.generation}, {"members", j.at("members")}, {"lost", j.at("lost")}}.dump());
    s.members = r.members;
    s.lost = r.lost;
    for (const auto& [role, indices] : j.at("taken").items()) s.taken[role] = indices.get<std::set<int>>();
    s.workers_left = j.at("workers_left").get<int>();
    s.store = j.at("store").get<std::map<std::string, std::string>>();
  } catch (const json::exception& e) {
    throw InvalidArgument(fmt::format("coordinator journal {}: {}", where, e.what()));
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(fmt::format("coordinator journal {}: {}", where, e.what()));
  }
  return s;
}

void write_journal(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  const fs::path tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text << '\n';
    out.flush();
    TRIB_CHECK(out.good(), IoError, "coordinator: cannot write its journal '{}'", tmp.string());
  }
  fs::rename(tmp, path, ec);
  TRIB_CHECK(!ec, IoError, "coordinator: cannot rename '{}' to '{}': {}", tmp.string(), path.string(), ec.message());
}

std::optional<JournalState> read_journal(const fs::path& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return parse_journal(text.str(), "'" + path.string() + "'");
}

}  // namespace trib::cluster
