// The coordinator's journal: what a restarted coordinator reads back, which store keys it
// keeps, and a journal that cannot be read refused with one line naming the file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cluster/coordinator_journal.h"
#include "trib/core/error.h"

namespace trib::cluster {
namespace {

namespace fs = std::filesystem;

class CoordinatorJournalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("trib_journal_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(CoordinatorJournalTest, ReadsBackWhatWasWrittenWithNoTemporaryLeft) {
  JournalState s;
  s.job_yaml = "name: t\n";
  s.generation = 12;
  s.members = {{"ps", 0, "127.0.0.1:5000", 2}, {"worker", 1, "127.0.0.1:5001", 7}};
  s.lost = {{"worker", 2, 3, 9, "connection lost"}};
  s.taken = {{"ps", {0}}, {"worker", {0, 1}}};
  s.workers_left = 2;
  s.store = {{"ps/0/address", "127.0.0.1:6000"}, {"next/worker", "3"}};
  const fs::path path = dir_ / "run" / "coordinator-journal.json";  // the directory is created
  write_journal(path, journal_text(s));
  EXPECT_FALSE(fs::exists(path.string() + ".tmp"));
  std::optional<JournalState> r = read_journal(path);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->job_yaml, s.job_yaml);
  EXPECT_FALSE(r->ended);
  EXPECT_EQ(r->generation, 12);
  ASSERT_EQ(r->members.size(), 2u);
  EXPECT_EQ(r->members[1].role, "worker");
  EXPECT_EQ(r->members[1].index, 1);
  EXPECT_EQ(r->members[1].address, "127.0.0.1:5001");
  EXPECT_EQ(r->members[1].incarnation, 7);
  ASSERT_EQ(r->lost.size(), 1u);
  EXPECT_EQ(r->lost[0].generation, 9);
  EXPECT_EQ(r->lost[0].reason, "connection lost");
  EXPECT_EQ(r->taken, s.taken);
  EXPECT_EQ(r->workers_left, 2);
  EXPECT_EQ(r->store, s.store);

  s.ended = true;  // rewritten whole
  write_journal(path, journal_text(s));
  EXPECT_TRUE(read_journal(path)->ended);
}

TEST_F(CoordinatorJournalTest, NoneIsNoJournalAndAnUnreadableOneIsRefusedNamingIt) {
  EXPECT_FALSE(read_journal(dir_ / "absent.json"));
  fs::create_directories(dir_);
  const fs::path torn = dir_ / "coordinator-journal.json";
  std::ofstream(torn) << R"({"version":1,"job_yaml":"name: t\n","ended":fal)";
  try {
    read_journal(torn);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("coordinator journal '" + torn.string() + "'"), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  std::ofstream(torn, std::ios::trunc) << R"({"version":99})";
  EXPECT_THROW(read_journal(torn), InvalidArgument);
}

TEST_F(CoordinatorJournalTest, KeepsTheKeysMembersCannotWriteAgainNotPerStepOnes) {
  for (const char* key : {"ps/0/address", "allreduce/1/address", "member/worker/1", "left/worker/0", "next/worker",
                          "membership/lost/worker/2", "job/stop", "job/stop_step", "train/resume_position"})
    EXPECT_TRUE(journaled_key(key)) << key;
  for (const char* key : {"stream/pos/100/0", "membership/roster", "membership/generation", "anything"})
    EXPECT_FALSE(journaled_key(key)) << key;
}

}  // namespace
}  // namespace trib::cluster
