// The fuzz corpus (tests/fuzz/corpus) is the crafted frames written out. This test runs
// every committed file through the decoder and checks the files still match the
// generator; after changing the generator, refresh them with
//   TRIB_REGENERATE_CORPUS=1 test_unit_net --gtest_filter='FrameCorpus.*'
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "crafted_frames.h"
#include "net/frame_decoder.h"

namespace trib::net {
namespace {

namespace fs = std::filesystem;
using testing::crafted_frames;
using testing::kCorpusMaxFrameBytes;

fs::path corpus_dir() {
  return fs::path(TRIB_SOURCE_DIR) / "tests" / "fuzz" / "corpus";
}

std::vector<std::byte> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> chars((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::byte> bytes(chars.size());
  std::memcpy(bytes.data(), chars.data(), chars.size());
  return bytes;
}

TEST(FrameCorpus, CommittedFilesMatchTheGenerator) {
  bool regenerate = std::getenv("TRIB_REGENERATE_CORPUS") != nullptr;
  for (const auto& crafted : crafted_frames()) {
    fs::path path = corpus_dir() / (crafted.name + ".bin");
    if (regenerate) {
      std::ofstream out(path, std::ios::binary | std::ios::trunc);
      out.write(reinterpret_cast<const char*>(crafted.bytes.data()),
                static_cast<std::streamsize>(crafted.bytes.size()));
    }
    ASSERT_TRUE(fs::exists(path)) << path << " missing; see the comment atop this file";
    EXPECT_EQ(read_file(path), crafted.bytes) << path << " is stale";
  }
}

TEST(FrameCorpus, EveryFileDecodesOrIsRejectedAsItsNameSays) {
  int files = 0;
  for (const auto& entry : fs::directory_iterator(corpus_dir())) {
    std::string name = entry.path().filename().string();
    SCOPED_TRACE(name);
    std::vector<std::byte> bytes = read_file(entry.path());
    ++files;
    if (name.starts_with("valid_")) {
      EXPECT_NO_THROW(decode_frame(bytes, kCorpusMaxFrameBytes));
    } else {
      EXPECT_THROW(decode_frame(bytes, kCorpusMaxFrameBytes), FrameRejected);
    }
  }
  EXPECT_GE(files, static_cast<int>(crafted_frames().size()));
}

}  // namespace
}  // namespace trib::net
