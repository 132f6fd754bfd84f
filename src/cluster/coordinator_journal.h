// What a coordinator keeps in the run directory (and, with cluster.store: etcd://..., in etcd)
// so that a restarted one (same --output, or --resume; or any machine, with etcd) can take the
// running job back: the generation, who held which index, the
// losses, and the store keys the members cannot simply write again (servers' addresses,
// the join counters, who has left, a requested stop). The members that reconnect confirm
// the rest. It is rewritten whole at every change, atomically (a temporary file, then a
// rename), so a coordinator killed at any moment leaves the previous or the new one.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "trib/cluster/roster.h"

namespace trib::cluster {

struct JournalState {
  std::string job_yaml;
  // The job is over (every worker left, or it failed): a coordinator started on this run
  // directory begins a new membership, only in a later generation.
  bool ended = false;
  std::int64_t generation = 0;
  std::vector<RosterEntry> members;
  std::vector<LostEntry> lost;
  std::map<std::string, std::set<int>> taken;  // role -> indices held or finished
  int workers_left = 0;                        // workers that joined and have not left
  std::map<std::string, std::string> store;    // the keys journaled_key() accepts
};

// Whether a store key must outlive the coordinator process.
bool journaled_key(const std::string& key);

// The journal as one line of JSON, and back (InvalidArgument naming `where` when it cannot be read).
std::string journal_text(const JournalState& state);
JournalState parse_journal(const std::string& text, const std::string& where);

void write_journal(const std::filesystem::path& path, const std::string& text);
// nullopt when there is none; throws InvalidArgument naming the file when it cannot be read.
std::optional<JournalState> read_journal(const std::filesystem::path& path);

// Where a durable registry (etcd) keeps the journal too (Registry::keep): a coordinator
// started on another machine, with none of the old one's files, takes the job back from it.
inline constexpr const char* kJournalKey = "coordinator/journal";

}  // namespace trib::cluster
