// The dashboard's members: listed by role, then index, whatever order the roster came in
// (the coordinator's is the order members joined).
#include <gtest/gtest.h>

#include "trib/monitor/cluster_status.h"

namespace trib::monitor {
namespace {

TEST(ClusterStatus, MembersAreSortedByRoleThenIndex) {
  nlohmann::json members = nlohmann::json::parse(R"([
    {"role": "worker", "index": 10, "state": "running"}, {"role": "ps", "index": 1, "state": "running"},
    {"role": "worker", "index": 2, "state": "lost"}, {"role": "coordinator", "index": 0, "state": "running"},
    {"role": "ps", "index": 0, "state": "running"}, {"role": "worker", "index": 0, "state": "running"}])");
  sort_members(members);
  std::vector<std::pair<std::string, int>> order;
  for (const auto& m : members) order.emplace_back(m["role"], m["index"]);
  EXPECT_EQ(order, (std::vector<std::pair<std::string, int>>{
                       {"coordinator", 0}, {"ps", 0}, {"ps", 1}, {"worker", 0}, {"worker", 2}, {"worker", 10}}));
  EXPECT_EQ(members[4]["state"], "lost") << "a member keeps its fields";
}

}  // namespace
}  // namespace trib::monitor
