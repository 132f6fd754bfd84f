// PartitionShare: who reads each partition when the job assigns them, and where a departed
// member's partitions go (docs/fault_tolerance.md, "Parameter-server stream jobs: a worker that
// leaves for good").
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "trib/stream/kafka_source.h"

namespace trib::stream {
namespace {

std::map<int, std::vector<int>> owners(int members, std::uint64_t absent, int partitions) {
  std::map<int, std::vector<int>> out;
  const PartitionShare share{.index = 0, .members = members, .absent = absent};
  for (int p = 0; p < partitions; ++p) out[share.owner(p)].push_back(p);
  return out;
}

TEST(PartitionShare, WithNobodyAbsentEachMemberReadsItsHomePartitions) {
  const auto o = owners(3, 0, 6);
  EXPECT_EQ(o.at(0), (std::vector<int>{0, 3}));
  EXPECT_EQ(o.at(1), (std::vector<int>{1, 4}));
  EXPECT_EQ(o.at(2), (std::vector<int>{2, 5}));
}

TEST(PartitionShare, ADepartedMembersPartitionsSpreadOverTheOthersAndNothingElseMoves) {
  const auto o = owners(3, 1u << 1, 6);  // member 1 left
  EXPECT_EQ(o.at(0), (std::vector<int>{0, 3, 4}));
  EXPECT_EQ(o.at(2), (std::vector<int>{1, 2, 5}));
  EXPECT_EQ(o.count(1), 0u);
  // A second departure moves only the partitions the second leaver held, its adopted ones too.
  const auto two = owners(3, (1u << 1) | (1u << 2), 6);
  EXPECT_EQ(two.at(0), (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

TEST(PartitionShare, OwnershipDependsOnlyOnWhoIsAbsentNotOnTheOrderOfDepartures) {
  for (int members = 2; members <= 5; ++members)
    for (std::uint64_t absent = 0; absent < (std::uint64_t{1} << members) - 1; ++absent)
      for (int p = 0; p < 4 * members; ++p) {
        const PartitionShare share{.index = 0, .members = members, .absent = absent};
        const int owner = share.owner(p);
        ASSERT_GE(owner, 0);
        EXPECT_EQ((absent >> owner) & 1u, 0u) << "an absent member reads nothing";
        // A member that was present before one more left keeps what it had.
        for (int leaver = 0; leaver < members; ++leaver) {
          const std::uint64_t more = absent | (std::uint64_t{1} << leaver);
          if (more == absent || more == (std::uint64_t{1} << members) - 1 || owner == leaver) continue;
          const PartitionShare after{.index = 0, .members = members, .absent = more};
          EXPECT_EQ(after.owner(p), owner)
              << members << " members, absent " << absent << ", partition " << p << ", then " << leaver << " left";
        }
      }
  const PartitionShare nobody{.index = 0, .members = 2, .absent = 3};
  EXPECT_EQ(nobody.owner(0), -1);
}

}  // namespace
}  // namespace trib::stream
