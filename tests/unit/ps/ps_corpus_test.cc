// The seeds of the PS request fuzzer (tests/fuzz/corpus_ps_request) through the fuzzer's own
// harness, in every build: the valid ones are served, the "bad_" ones refused.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "fuzz/ps_request_harness.h"

namespace trib::ps {
namespace {

namespace fs = std::filesystem;

TEST(PsRequestCorpus, ValidSeedsAreServedAndBadOnesRefused) {
  const fs::path dir = fs::path(TRIB_SOURCE_DIR) / "tests" / "fuzz" / "corpus_ps_request";
  std::vector<fs::path> seeds;
  for (const auto& entry : fs::directory_iterator(dir)) seeds.push_back(entry.path());
  std::sort(seeds.begin(), seeds.end());
  ASSERT_GE(seeds.size(), 8u);
  for (const fs::path& seed : seeds) {
    std::ifstream in(seed, std::ios::binary);
    std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const bool bad = seed.filename().string().starts_with("bad_");
    EXPECT_EQ(fuzz::serve_request(bytes.data(), bytes.size()), bad ? fuzz::Outcome::refused : fuzz::Outcome::served)
        << seed.filename();
  }
}

}  // namespace
}  // namespace trib::ps
