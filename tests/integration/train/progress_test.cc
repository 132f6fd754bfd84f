// The plain progress lines a log gets: with a known length, step/total, epoch and ETA; for a
// stream (no length), the step alone.
#include "trib/train/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace trib::train {
namespace {

std::string printed(std::int64_t total, std::int64_t step) {
  std::FILE* f = std::tmpfile();
  {
    Progress p(f, ProgressMode::plain, total);
    p.step(step, 0.5, 0.25, 64);
  }
  std::rewind(f);
  std::string out(4096, '\0');
  out.resize(std::fread(out.data(), 1, out.size(), f));
  std::fclose(f);
  return out;
}

TEST(Progress, AKnownLengthShowsStepOfTotalAndEta) {
  const std::string line = printed(10, 10);
  EXPECT_NE(line.find("step 10/10 epoch 0.50"), std::string::npos) << line;
  EXPECT_NE(line.find(" eta "), std::string::npos) << line;
}

TEST(Progress, AStreamShowsTheStepAlone) {
  const std::string line = printed(0, 5);
  EXPECT_NE(line.find("step 5 examples_per_s"), std::string::npos) << line;
  EXPECT_EQ(line.find("/0"), std::string::npos) << line;
  EXPECT_EQ(line.find("eta"), std::string::npos) << line;
}

}  // namespace
}  // namespace trib::train
