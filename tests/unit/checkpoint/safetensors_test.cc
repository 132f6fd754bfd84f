#include <gtest/gtest.h>

#include <cstring>

#include <nlohmann/json.hpp>

#include "temp_dir.h"
#include "trib/checkpoint/safetensors.h"

namespace trib {
namespace {

using testing::read_bytes;
using testing::write_bytes;

class Safetensors : public testing::TempDirTest {};

// A file with the given 8-byte length field, header text and data bytes.
std::string raw_file(std::uint64_t length, const std::string& header, const std::string& data = "") {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(length >> (8 * i));
  return out + header + data;
}
std::string raw_file(const std::string& header, const std::string& data = "") {
  return raw_file(header.size(), header, data);
}

// Expects the reader to reject `bytes` with a Corruption whose one-line message contains `part`.
void expect_rejected(const std::filesystem::path& path, const std::string& bytes, const std::string& part) {
  write_bytes(path, bytes);
  try {
    SafetensorsReader reader(path);
    ADD_FAILURE() << "accepted a file that should fail with: " << part;
  } catch (const Corruption& e) {
    std::string what = e.what();
    EXPECT_NE(what.find(part), std::string::npos) << what;
    EXPECT_NE(what.find(path.string()), std::string::npos) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
}

TensorMap sample_tensors() {
  return {{"dense1/w", Tensor::from_vector(Shape{2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6})},
          {"count", Tensor::from_vector(Shape{}, std::vector<std::int64_t>{-7})},
          {"empty", Tensor::zeros(DType::i32, Shape{0, 4})},
          {"ids", Tensor::from_vector(Shape{3}, std::vector<std::int32_t>{9, -1, 2147483647})}};
}

TEST_F(Safetensors, FileFollowsTheStandardLayout) {
  // Parses the file by hand, as any other safetensors reader would.
  TensorMap tensors = sample_tensors();
  const auto path = dir() / "t.safetensors";
  write_safetensors(path, tensors, {{"note", "hello"}});
  const std::string bytes = read_bytes(path);
  ASSERT_GE(bytes.size(), 8u);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  ASSERT_LE(8 + n, bytes.size());
  EXPECT_EQ((8 + n) % 8, 0u) << "data should start 8-byte aligned";
  const nlohmann::json header = nlohmann::json::parse(bytes.substr(8, n));
  const std::string data = bytes.substr(8 + n);

  EXPECT_EQ(header["__metadata__"], (nlohmann::json{{"note", "hello"}}));
  std::uint64_t expected_begin = 0;
  for (const auto& [name, t] : tensors) {  // name order, contiguous
    const nlohmann::json& e = header.at(name);
    EXPECT_EQ(e["dtype"], t.dtype() == DType::f32 ? "F32" : t.dtype() == DType::i32 ? "I32" : "I64") << name;
    EXPECT_EQ(e["shape"].get<std::vector<std::int64_t>>(), t.shape().dims()) << name;
    const auto offsets = e["data_offsets"].get<std::vector<std::uint64_t>>();
    ASSERT_EQ(offsets.size(), 2u);
    EXPECT_EQ(offsets[0], expected_begin) << name;
    EXPECT_EQ(offsets[1] - offsets[0], t.nbytes()) << name;
    ASSERT_LE(offsets[1], data.size());
    EXPECT_EQ(std::memcmp(data.data() + offsets[0], t.raw_data(), t.nbytes()), 0) << name;
    expected_begin = offsets[1];
  }
  EXPECT_EQ(expected_begin, data.size());
  EXPECT_EQ(header.size(), tensors.size() + 1);
}

TEST_F(Safetensors, RoundTripsScalarsAndEmptyTensors) {
  const auto path = dir() / "t.safetensors";
  TensorMap tensors = sample_tensors();
  write_safetensors(path, tensors);
  SafetensorsReader reader(path);
  TensorMap back = reader.read_all();
  ASSERT_EQ(back.size(), tensors.size());
  EXPECT_EQ(back["dense1/w"].to_vector<float>(), tensors["dense1/w"].to_vector<float>());
  EXPECT_EQ(back["count"].shape(), Shape{});
  EXPECT_EQ(back["count"].to_vector<std::int64_t>(), std::vector<std::int64_t>{-7});
  EXPECT_EQ(back["empty"].spec_string(), "i32[0, 4]");
  EXPECT_EQ(back["ids"].to_vector<std::int32_t>(), tensors["ids"].to_vector<std::int32_t>());
  EXPECT_TRUE(reader.metadata().empty());
  EXPECT_NE(reader.find("ids"), nullptr);
  EXPECT_EQ(reader.find("nope"), nullptr);
}

TEST_F(Safetensors, RejectsAHugeHeaderLengthBeforeAllocating) {
  expect_rejected(dir() / "f", raw_file(0xFFFFFFFFFFFFFFFFull, "{}"), "header length 18446744073709551615");
}

TEST_F(Safetensors, RejectsAFileShorterThanTheLength) {
  expect_rejected(dir() / "f", "abc", "file is truncated (3 bytes, shorter than the 8-byte header length)");
}

TEST_F(Safetensors, RejectsMalformedHeaderJson) {
  expect_rejected(dir() / "f", raw_file("{\"a\": {\"dtype\": "), "header is not valid JSON");
  expect_rejected(dir() / "f", raw_file("[1, 2]"), "header is not a JSON object");
}

TEST_F(Safetensors, RejectsUnsupportedDtypes) {
  expect_rejected(dir() / "f", raw_file(R"({"x":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]}})", "ab"),
                  "tensor 'x' has dtype 'BF16'");
}

TEST_F(Safetensors, RejectsOffsetsThatDisagreeWithTheShape) {
  expect_rejected(dir() / "f", raw_file(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", "abcd"),
                  "tensor 'x' is F32[2] (8 bytes) but its data_offsets [0, 4] span 4 bytes");
}

TEST_F(Safetensors, RejectsOverlappingTensors) {
  expect_rejected(dir() / "f",
                  raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                           R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                           std::string(12, 'x')),
                  "tensors 'a' and 'b' overlap");
}

TEST_F(Safetensors, RejectsOffsetsPastTheEndAsTruncation) {
  expect_rejected(dir() / "f", raw_file(R"({"a":{"dtype":"I64","shape":[512],"data_offsets":[0,4096]}})", "x"),
                  "file is truncated (header says 4096 bytes of data, file has 1)");
}

TEST_F(Safetensors, RejectsBadMetadata) {
  expect_rejected(dir() / "f", raw_file(R"({"__metadata__":{"k":1}})"), "'__metadata__' entry 'k' is not a string");
}

TEST_F(Safetensors, RejectsUnusableTensorNames) {
  EXPECT_THROW(write_safetensors(dir() / "f", {{"__metadata__", Tensor::scalar(1)}}), InvalidArgument);
  EXPECT_THROW(write_safetensors(dir() / "f", {{"", Tensor::scalar(1)}}), InvalidArgument);
  EXPECT_THROW(write_safetensors(dir() / "f", {{"x", Tensor()}}), InvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(dir() / "f"));
}

TEST_F(Safetensors, MissingFileIsNotFound) {
  EXPECT_THROW(SafetensorsReader(dir() / "absent.safetensors"), NotFound);
}

}  // namespace
}  // namespace trib
