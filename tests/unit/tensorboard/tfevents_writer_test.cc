// TFRecord framing of the tfevents writer. (An independent reader of whole files, in Python,
// runs in tests/e2e/monitor.)
#include <gtest/gtest.h>

#include <cstring>
#include <unistd.h>

#include <fstream>

#include "trib/tensorboard/tfevents_writer.h"

namespace trib::tensorboard {
namespace {

std::uint32_t u32(const std::string& s, std::size_t at) {
  std::uint32_t v = 0;
  std::memcpy(&v, s.data() + at, 4);
  return v;
}

TEST(TfEvents, MaskedCrcIsTensorFlows) {
  // CRC32C("123456789") = 0xe3069283, rotated right by 15 plus 0xa282ead8.
  EXPECT_EQ(masked_crc32c("123456789", 9), 0xc78ab0e5u);
}

TEST(TfEvents, RecordIsLengthCrcDataCrc) {
  const std::string r = tfrecord("abc");
  ASSERT_EQ(r.size(), 8u + 4 + 3 + 4);
  std::uint64_t length = 0;
  std::memcpy(&length, r.data(), 8);
  EXPECT_EQ(length, 3u);
  EXPECT_EQ(u32(r, 8), masked_crc32c(r.data(), 8));
  EXPECT_EQ(r.substr(12, 3), "abc");
  EXPECT_EQ(u32(r, 15), masked_crc32c("abc", 3));
}

TEST(TfEvents, WriterStartsWithTheFileVersionAndAppendsRecords) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("trib_tfevents_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::filesystem::path file;
  {
    TfEventsWriter w(dir);
    file = w.path();
    EXPECT_NE(file.filename().string().find("events.out.tfevents."), std::string::npos);
    w.scalar("loss/worker0", 10, 0.5);
    w.flush();
  }
  std::ifstream in(file, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::size_t at = 0;
  int records = 0;
  while (at < bytes.size()) {
    std::uint64_t length = 0;
    ASSERT_GE(bytes.size() - at, 16u);
    std::memcpy(&length, bytes.data() + at, 8);
    ASSERT_EQ(u32(bytes, at + 8), masked_crc32c(bytes.data() + at, 8));
    ASSERT_EQ(u32(bytes, at + 12 + length), masked_crc32c(bytes.data() + at + 12, length));
    const std::string data = bytes.substr(at + 12, length);
    const char* expected = records == 0 ? "brain.Event:2" : "loss/worker0";
    EXPECT_NE(data.find(expected), std::string::npos) << "record " << records;
    at += 16 + length;
    ++records;
  }
  EXPECT_EQ(records, 2);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trib::tensorboard
