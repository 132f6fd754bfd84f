#include "trib/data/idx.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include <gtest/gtest.h>

#include "unit/data/data_test_util.h"
#include "trib/core/error.h"

namespace trib::data {
namespace {

using testing::TempDir;

const std::string kFashionDir = "/usr/share/datasets/fashion-mnist/";

// An IDX file of unsigned bytes: magic (0, 0, 8, rank), big-endian dims, then `values`.
std::string idx_bytes(std::vector<std::uint32_t> dims, const std::string& values) {
  std::string out = {0, 0, 8, static_cast<char>(dims.size())};
  for (std::uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((d >> shift) & 0xff);
  return out + values;
}

// Two 2x3 images (pixels 0..11) and their labels {3, 1}.
struct TinyIdx {
  TempDir dir;
  std::string images = dir.file("images.idx");
  std::string labels = dir.file("labels.idx");
  TinyIdx() {
    testing::write_file(images, idx_bytes({2, 2, 3}, std::string("\0\1\2\3\4\5\6\7\10\11\12\13", 12)));
    testing::write_file(labels, idx_bytes({2}, "\3\1"));
  }
};

// The message of the exception `f` throws as E; fails the test if it throws nothing.
template <typename E, typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected an exception";
  return "";
}

TEST(IdxTest, ReadsRawAndGzippedFilesAlike) {
  TinyIdx tiny;
  testing::write_gzip(tiny.dir.file("images.gz"), idx_bytes({2, 2, 3}, std::string(12, '\xff')));
  InMemoryDataset raw = load_idx_pair(tiny.images, tiny.labels, {.num_classes = 4, .scale_to_unit = false});
  EXPECT_EQ(raw.size(), 2);
  EXPECT_EQ(raw.example_shape(), (Shape{2, 3}));
  Batch second = raw.get(1);
  EXPECT_EQ(second.features().to_vector<float>(), (std::vector<float>{6, 7, 8, 9, 10, 11}));
  EXPECT_EQ(second.labels().to_vector<std::int32_t>(), (std::vector<std::int32_t>{1}));

  InMemoryDataset gz = load_idx_pair(tiny.dir.file("images.gz"), tiny.labels, {.flatten = true});
  EXPECT_EQ(gz.example_shape(), (Shape{6}));
  EXPECT_EQ(gz.get(0).features().to_vector<float>(), std::vector<float>(6, 1.0f));  // 255 / 255
}

TEST(IdxTest, MissingFileIsNamed) {
  EXPECT_EQ(error_of<NotFound>([] { read_idx("/nonexistent/images.idx", 3); }),
            "cannot open '/nonexistent/images.idx': no such file");
}

TEST(IdxTest, TruncatedFileGivesExpectedAndActualBytes) {
  TempDir dir;
  const std::string raw = dir.file("short.idx"), gz = dir.file("short.gz");
  testing::write_file(raw, idx_bytes({2, 2, 3}, "12345"));
  testing::write_gzip(gz, idx_bytes({2, 2, 3}, "12345"));
  const std::string expected = "is truncated: its header promises 12 bytes of data (2x2x3), found 5";
  EXPECT_EQ(error_of<Corruption>([&] { read_idx(raw, 3); }), "'" + raw + "' " + expected);
  EXPECT_EQ(error_of<Corruption>([&] { read_idx(gz, 3); }), "'" + gz + "' " + expected);

  // Gzip streams that are themselves cut off: in the trailer, and in the compressed data.
  const std::string cut = dir.file("cut.gz");
  testing::write_gzip(cut, idx_bytes({1000}, std::string(1000, 'x')));
  std::filesystem::resize_file(cut, std::filesystem::file_size(cut) - 6);
  EXPECT_EQ(error_of<Corruption>([&] { read_idx(cut, 1); }),
            "'" + cut + "' is truncated: its gzip stream ends before its checksum, after all 1000 bytes of data");
  std::string random_bytes;
  for (int i = 0; i < 5000; ++i) random_bytes += static_cast<char>((i * 7919) % 251);
  testing::write_gzip(cut, idx_bytes({5000}, random_bytes));
  std::filesystem::resize_file(cut, std::filesystem::file_size(cut) / 2);
  const std::string message = error_of<Corruption>([&] { read_idx(cut, 1); });
  EXPECT_TRUE(message.starts_with("'" + cut + "' is truncated: its header promises 5000 bytes of data (5000), found "))
      << message;
  EXPECT_TRUE(message.ends_with(" (its gzip stream ends early)")) << message;
}

TEST(IdxTest, WrongMagicNamesFoundAndExpected) {
  TinyIdx tiny;
  // Swapped arguments: the labels file where the images should be.
  EXPECT_EQ(error_of<Corruption>([&] { load_idx_pair(tiny.labels, tiny.images); }),
            "'" + tiny.labels + "' has IDX magic 0x00000801, expected 0x00000803 (unsigned bytes, 3 dimensions)");
}

TEST(IdxTest, ExtraBytesAreAnError) {
  TempDir dir;
  testing::write_file(dir.file("long.idx"), idx_bytes({2}, "\1\2\3"));
  EXPECT_THROW(read_idx(dir.file("long.idx"), 1), Corruption);
}

TEST(IdxTest, CountMismatchAndLabelRangeAreChecked) {
  TinyIdx tiny;
  testing::write_file(tiny.dir.file("three.idx"), idx_bytes({3}, "\1\1\1"));
  EXPECT_EQ(error_of<InvalidArgument>([&] { load_idx_pair(tiny.images, tiny.dir.file("three.idx")); }),
            "'" + tiny.images + "' holds 2 images but '" + tiny.dir.file("three.idx") + "' holds 3 labels");
  EXPECT_EQ(error_of<InvalidArgument>([&] { load_idx_pair(tiny.images, tiny.labels, {.num_classes = 3}); }),
            "'" + tiny.labels + "': label 3 at index 0 is outside [0, 3)");
}

TEST(IdxTest, LoadsFashionMnist) {
  if (!std::filesystem::exists(kFashionDir)) GTEST_SKIP() << "package dataset-fashion-mnist not installed";
  const auto start = std::chrono::steady_clock::now();
  InMemoryDataset train = load_idx_pair(kFashionDir + "train-images-idx3-ubyte.gz",
                                        kFashionDir + "train-labels-idx1-ubyte.gz", {.num_classes = 10});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RecordProperty("fashion_mnist_train_load_seconds", std::to_string(seconds));
  std::printf("Fashion-MNIST train set loaded in %.3f s\n", seconds);

  EXPECT_EQ(train.size(), 60000);
  EXPECT_EQ(train.example_shape(), (Shape{28, 28}));
  EXPECT_EQ(train.byte_features().size(), 60000u * 28 * 28);
  EXPECT_EQ(train.labels()[0], 9);  // an ankle boot, as in the published dataset
  auto [lo, hi] = std::minmax_element(train.labels().begin(), train.labels().end());
  EXPECT_EQ(*lo, 0);
  EXPECT_EQ(*hi, 9);

  Batch first = train.get(0);
  EXPECT_EQ(first.features().spec_string(), "f32[1, 28, 28]");
  auto pixels = first.features().to_vector<float>();
  EXPECT_EQ(*std::min_element(pixels.begin(), pixels.end()), 0.0f);
  EXPECT_EQ(*std::max_element(pixels.begin(), pixels.end()), 1.0f);

  InMemoryDataset test = load_idx_pair(kFashionDir + "t10k-images-idx3-ubyte.gz",
                                       kFashionDir + "t10k-labels-idx1-ubyte.gz", {.num_classes = 10});
  EXPECT_EQ(test.size(), 10000);
}

}  // namespace
}  // namespace trib::data
