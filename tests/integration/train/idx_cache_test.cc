// The decoded IDX cache (src/train/idx_cache.h): a hit gives the same examples as the files, and
// every reason not to trust a cache file (a changed source, a damaged or torn file, other
// sources) decodes the files again and gives their current contents.
#include "train/idx_cache.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "trib/core/error.h"
#include "unit/data/data_test_util.h"

namespace trib::train {
namespace {

namespace fs = std::filesystem;
using data::testing::TempDir;

std::string be32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}

// `n` images of 2x3 pixels, pixel j of image i = base + 6 i + j; labels (base + i) % 10.
void write_pair(const TempDir& dir, int n, int base) {
  std::string images = be32(0x803) + be32(n) + be32(2) + be32(3), labels = be32(0x801) + be32(n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < 6; ++j) images += static_cast<char>((base + 6 * i + j) & 0xff);
    labels += static_cast<char>((base + i) % 10);
  }
  data::testing::write_gzip(dir.file("images.gz"), images);
  data::testing::write_file(dir.file("labels"), labels);
}

// Every example's pixels (times the scale) and label, in order.
std::vector<float> contents(const data::InMemoryDataset& ds) {
  std::vector<std::int64_t> all(static_cast<std::size_t>(ds.size()));
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);
  data::Batch b = ds.gather(all);
  std::vector<float> out(b.features().data<float>(), b.features().data<float>() + b.features().shape().numel());
  for (std::int64_t i = 0; i < ds.size(); ++i) out.push_back(static_cast<float>(b.labels().data<std::int32_t>()[i]));
  return out;
}

std::vector<float> expected(int n, int base, float scale) {
  std::vector<float> out;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < 6; ++j) out.push_back(static_cast<float>((base + 6 * i + j) & 0xff) * scale);
  for (int i = 0; i < n; ++i) out.push_back(static_cast<float>((base + i) % 10));
  return out;
}

fs::path the_cache_file(const std::string& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".tribidx") return e.path();
  return {};
}

struct IdxCacheTest : ::testing::Test {
  TempDir files, cache;
  IdxCacheOptions options() const { return {cache.file("idx"), 10, 0.5f}; }
  data::InMemoryDataset load(IdxCacheOutcome& out) const {
    return load_idx_cached(files.file("images.gz"), files.file("labels"), options(), &out);
  }
};

TEST_F(IdxCacheTest, TheSecondLoadMapsTheDecodedCopyAndGivesTheSameExamples) {
  write_pair(files, 5, 7);
  IdxCacheOutcome first, second;
  data::InMemoryDataset a = load(first);
  EXPECT_FALSE(first.hit);
  EXPECT_EQ(first.detail, "no cache file");
  ASSERT_FALSE(the_cache_file(cache.file("idx")).empty());
  data::InMemoryDataset b = load(second);
  EXPECT_TRUE(second.hit) << second.detail;
  EXPECT_EQ(b.example_shape(), (Shape{2, 3}));
  EXPECT_EQ(contents(a), expected(5, 7, 0.5f));
  EXPECT_EQ(contents(b), expected(5, 7, 0.5f));
  // The mapping outlives the cache file's removal and any copy of the dataset.
  fs::remove(the_cache_file(cache.file("idx")));
  data::InMemoryDataset c = b;
  EXPECT_EQ(contents(c), expected(5, 7, 0.5f));
}

TEST_F(IdxCacheTest, ASourceRewrittenSinceItWasDecodedIsDecodedAgain) {
  write_pair(files, 5, 7);
  IdxCacheOutcome out;
  load(out);
  write_pair(files, 4, 100);  // same names, new contents, sizes and times
  // Same size, new contents: the modification time alone must tell.
  struct timespec later[2] = {{0, UTIME_OMIT}, {2'000'000'000, 5}};
  ASSERT_EQ(::utimensat(AT_FDCWD, files.file("labels").c_str(), later, 0), 0);
  data::InMemoryDataset ds = load(out);
  EXPECT_FALSE(out.hit);
  EXPECT_EQ(out.detail, "a source file changed since it was decoded (size or modification time)");
  EXPECT_EQ(contents(ds), expected(4, 100, 0.5f));
  load(out);
  EXPECT_TRUE(out.hit) << out.detail;  // rewritten from the new sources
}

TEST_F(IdxCacheTest, ADamagedOrTornCacheFileIsNotUsedAndIsReplaced) {
  write_pair(files, 5, 7);
  IdxCacheOutcome out;
  load(out);
  const fs::path file = the_cache_file(cache.file("idx"));
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(-3, std::ios::end);  // a label byte
    f.put('\x55');
  }
  data::InMemoryDataset ds = load(out);
  EXPECT_FALSE(out.hit);
  EXPECT_EQ(out.detail, "its data's checksum does not match (damaged)");
  EXPECT_EQ(contents(ds), expected(5, 7, 0.5f));
  load(out);
  EXPECT_TRUE(out.hit) << out.detail;

  fs::resize_file(file, fs::file_size(file) - 1);
  ds = load(out);
  EXPECT_EQ(out.detail, "its length disagrees with its header (torn or damaged)");
  EXPECT_EQ(contents(ds), expected(5, 7, 0.5f));

  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(20);  // inside the header: a source's recorded size
    f.put('\x7f');
  }
  ds = load(out);
  EXPECT_EQ(out.detail, "its header's checksum does not match (damaged)");
  EXPECT_EQ(contents(ds), expected(5, 7, 0.5f));

  fs::resize_file(file, 10);
  load(out);
  EXPECT_EQ(out.detail, "it is shorter than its header or cannot be mapped");
}

TEST_F(IdxCacheTest, AnotherPairOfFilesGetsItsOwnCacheFile) {
  write_pair(files, 5, 7);
  IdxCacheOutcome out;
  load(out);
  TempDir other;
  data::testing::write_file(other.file("labels"), be32(0x801) + be32(5) + std::string("\1\2\3\4\5"));
  fs::copy_file(files.file("images.gz"), other.file("images.gz"));
  load_idx_cached(other.file("images.gz"), other.file("labels"), options(), &out);
  EXPECT_EQ(out.detail, "no cache file");
  load(out);
  EXPECT_TRUE(out.hit) << out.detail;
}

TEST_F(IdxCacheTest, WithoutADirectoryOrWhereItCannotBeWrittenTheFilesAreReadEachTime) {
  write_pair(files, 3, 1);
  IdxCacheOutcome out;
  data::InMemoryDataset ds = load_idx_cached(files.file("images.gz"), files.file("labels"), {"", 10, 1.0f}, &out);
  EXPECT_EQ(out.detail, "off");
  EXPECT_EQ(contents(ds), expected(3, 1, 1.0f));
  data::testing::write_file(cache.file("a_file"), "x");  // a file where the directory should be
  ds = load_idx_cached(files.file("images.gz"), files.file("labels"), {cache.file("a_file") + "/idx", 10, 1.0f}, &out);
  EXPECT_FALSE(out.hit);
  EXPECT_NE(out.detail.find("not written: cannot create"), std::string::npos) << out.detail;
  EXPECT_EQ(contents(ds), expected(3, 1, 1.0f));
}

TEST_F(IdxCacheTest, LabelsAreCheckedAgainstTheClassCountOnAHitToo) {
  write_pair(files, 5, 7);
  IdxCacheOutcome out;
  load(out);
  IdxCacheOptions fewer = options();
  fewer.num_classes = 5;
  try {
    load_idx_cached(files.file("images.gz"), files.file("labels"), fewer, &out);
    FAIL() << "expected InvalidArgument";
  } catch (const InvalidArgument& e) {
    EXPECT_TRUE(out.hit);
    EXPECT_NE(std::string(e.what()).find("is outside [0, 5)"), std::string::npos) << e.what();
  }
}

TEST_F(IdxCacheTest, AMissingSourceIsNamedAsWithoutACache) {
  IdxCacheOutcome out;
  EXPECT_THROW(load(out), NotFound);
}

}  // namespace
}  // namespace trib::train
