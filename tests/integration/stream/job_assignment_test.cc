// Partitions assigned by the job (KafkaSourceOptions::share), as allreduce stream jobs read
// them: member i of n reads the partitions p with p % n == i, with no consumer-group
// membership. A regroup moves partitions among the members at once, with no rebalance and no
// session to wait out: every member rewinds to the checkpoint and takes its new share, and
// together they read every event after the checkpoint exactly once.
#include <algorithm>
#include <optional>
#include <thread>

#include <gmock/gmock.h>

#include "integration/stream/stream_test_util.h"
#include "trib/core/error.h"
#include "trib/stream/stream_position.h"

namespace trib::stream {
namespace {

using namespace testing;

class JobAssignmentTest : public StreamTest {};

KafkaSourceOptions share_options(const std::string& bootstrap, const std::string& topic, int index, int members) {
  KafkaSourceOptions o = source_options(bootstrap, topic);
  o.reports_applied = true;
  o.share = PartitionShare{.index = index, .members = members};
  return o;
}

// Reads and applies batches until `rows` records came out of the source (or 15 s); returns
// their ids.
std::vector<std::int64_t> apply(KafkaSource& kafka, std::size_t rows) {
  std::vector<std::int64_t> ids;
  for (auto end = std::chrono::steady_clock::now() + 15s; ids.size() < rows && std::chrono::steady_clock::now() < end;) {
    std::optional<data::Batch> b = kafka.next(static_cast<std::int64_t>(std::min<std::size_t>(32, rows - ids.size())));
    if (!b) continue;
    auto part = ids_of(*b);
    ids.insert(ids.end(), part.begin(), part.end());
    kafka.applied(*b);
  }
  return ids;
}

// Reads and applies from every source in turn until `ids` holds `total` records (or 20 s),
// then once more from each: a record read twice shows up as a repeat.
void apply_all(const std::vector<KafkaSource*>& sources, std::size_t total, std::vector<std::int64_t>& ids) {
  const auto take = [&ids](KafkaSource& kafka) {
    if (std::optional<data::Batch> b = kafka.next(32)) {
      auto part = ids_of(*b);
      ids.insert(ids.end(), part.begin(), part.end());
      kafka.applied(*b);
    }
  };
  for (auto end = std::chrono::steady_clock::now() + 20s; ids.size() < total && std::chrono::steady_clock::now() < end;)
    for (KafkaSource* k : sources) take(*k);
  for (KafkaSource* k : sources) take(*k);
}

std::vector<std::int32_t> sorted(std::vector<std::int32_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

TEST_F(JobAssignmentTest, MembersReadTheirOwnSharesWithoutAGroupRebalance) {
  const std::string topic = make_topic(4);
  produce_events(bootstrap(), topic, 0, 800);
  KafkaSource first(share_options(bootstrap(), topic, 0, 2));
  KafkaSource second(share_options(bootstrap(), topic, 1, 2));
  EXPECT_EQ(sorted(first.assignment()), (std::vector<std::int32_t>{0, 2}));
  EXPECT_EQ(sorted(second.assignment()), (std::vector<std::int32_t>{1, 3}));

  std::vector<std::int64_t> all;
  apply_all({&first, &second}, 800, all);
  expect_each_once(all, 800);
  for (const KafkaSource* k : {&first, &second}) {
    EXPECT_EQ(k->stats().assignments, 1) << "one assignment each, from the job";
    EXPECT_EQ(k->stats().revocations, 0);
  }
}

// Three members train, the job checkpoints their merged progress, member 2 is lost and more
// is applied (then discarded by the rollback); the two survivors rewind to the checkpoint and
// take shares of two. Together the checkpoint's records and what they read after it are every
// event once; the lost member's partitions start at the checkpoint at once.
TEST_F(JobAssignmentTest, ARegroupMovesTheLostMembersPartitionsFromTheCheckpointAtOnce) {
  const std::string topic = make_topic(6);
  produce_events(bootstrap(), topic, 0, 1200);
  std::vector<std::unique_ptr<KafkaSource>> members;
  for (int i = 0; i < 3; ++i) members.push_back(std::make_unique<KafkaSource>(share_options(bootstrap(), topic, i, 3)));

  std::vector<std::int64_t> trained;  // what the checkpoint holds as applied
  data::DataPosition checkpoint;
  for (auto& m : members) {
    const std::vector<std::int64_t> ids = apply(*m, 96);
    ASSERT_EQ(ids.size(), 96u);
    trained.insert(trained.end(), ids.begin(), ids.end());
    merge_claims(checkpoint, m->applied_position());
  }
  for (auto& m : members) apply(*m, 64);  // applied to a model the rollback discards
  members.pop_back();                     // member 2 is lost

  const auto regroup = std::chrono::steady_clock::now();
  for (int i = 0; i < 2; ++i) {
    members[i]->rewind(checkpoint, "g1");
    members[i]->reassign(PartitionShare{.index = i, .members = 2});
  }
  EXPECT_LT(std::chrono::steady_clock::now() - regroup, 2s) << "no session timeout to wait out";
  EXPECT_EQ(sorted(members[0]->assignment()), (std::vector<std::int32_t>{0, 2, 4}));
  EXPECT_EQ(sorted(members[1]->assignment()), (std::vector<std::int32_t>{1, 3, 5}));
  apply_all({members[0].get(), members[1].get()}, 1200, trained);
  expect_each_once(trained, 1200);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(members[i]->stats().assignments, 2) << "member " << i << ": the start and the regroup, nothing else";
    EXPECT_EQ(members[i]->stats().revocations, 1) << "member " << i;
  }
  const PartitionProgressMap claims = progress_in(members[0]->applied_position(), topic);
  for (std::int32_t p : {0, 2, 4}) EXPECT_TRUE(claims.contains(p)) << "partition " << p;
  for (std::int32_t p : {1, 3, 5}) EXPECT_FALSE(claims.contains(p)) << "partition " << p << " belongs to member 1";
}

// A member held longer than a consumer-group session (an allreduce survivor waiting in a
// rollback) is not a group member: nothing evicts it, and it goes on with its own partitions.
TEST_F(JobAssignmentTest, AMemberThatDoesNotPollForLongerThanASessionKeepsItsPartitions) {
  const std::string topic = make_topic(2);
  produce_events(bootstrap(), topic, 0, 200);
  KafkaSource first(share_options(bootstrap(), topic, 0, 2));
  KafkaSource second(share_options(bootstrap(), topic, 1, 2));
  std::vector<std::int64_t> ids;
  apply_all({&first, &second}, 100, ids);
  std::this_thread::sleep_for(4s);  // the sources' session.timeout.ms is 3000 (fast_kafka)
  apply_all({&first, &second}, 200, ids);
  expect_each_once(ids, 200);
  for (const KafkaSource* k : {&first, &second}) {
    EXPECT_EQ(k->stats().assignments, 1);
    EXPECT_EQ(k->stats().revocations, 0);
  }
  EXPECT_EQ(first.assignment(), (std::vector<std::int32_t>{0}));
  EXPECT_EQ(second.assignment(), (std::vector<std::int32_t>{1}));
}

TEST_F(JobAssignmentTest, AShareWithNoPartitionFailsNamingTheTopicAndTheCounts) {
  const std::string topic = make_topic(2);
  try {
    KafkaSource kafka(share_options(bootstrap(), topic, 2, 3));
    FAIL() << "a member with no partition was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("'" + topic + "' has 2 partition(s), fewer than the 3 workers"));
  }
}

TEST_F(JobAssignmentTest, AGroupAssignedSourceRefusesAReassignment) {
  const std::string topic = make_topic(2);
  KafkaSourceOptions o = source_options(bootstrap(), topic);
  o.reports_applied = true;
  KafkaSource kafka(o);
  EXPECT_THROW(kafka.reassign(PartitionShare{.index = 0, .members = 1}), InvalidArgument);
}

}  // namespace
}  // namespace trib::stream
