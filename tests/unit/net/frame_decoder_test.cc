#include "net/frame_decoder.h"

#include <gtest/gtest.h>

#include <random>

#include "crafted_frames.h"
#include "net/frame_writer.h"
#include "trib/core/tensor.h"

namespace trib::net {
namespace {

using testing::crafted_frames;
using testing::kCorpusMaxFrameBytes;

TEST(FrameDecoder, DecodesWhatTheWriterSeals) {
  Tensor t = Tensor::from_vector<float>(Shape{2, 2}, {1, 2, 3, 4});
  std::string body = "weights/layer1";
  OutgoingFrame out{MessageType::request, 9, 77, std::as_bytes(std::span(body)), &t};
  std::vector<std::byte> bytes = seal_frame(out, 1, nullptr).to_bytes();
  FrameView view = decode_frame(bytes, 1 << 20);
  EXPECT_EQ(view.header.message_type(), MessageType::request);
  EXPECT_EQ(view.header.tag, 77u);
  EXPECT_EQ(view.header.method, 9u);
  ASSERT_TRUE(view.tensor.has_value());
  EXPECT_EQ(view.tensor->shape, (Shape{2, 2}));
  EXPECT_EQ(view.tensor->nbytes, 16u);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(view.body.data()), view.body.size()), body);
  EXPECT_EQ(std::memcmp(view.tensor_bytes.data(), t.raw_data(), 16), 0);
}

TEST(FrameDecoder, EachCraftedFrameIsAcceptedOrRejectedForItsReason) {
  for (const auto& crafted : crafted_frames()) {
    SCOPED_TRACE(crafted.name);
    if (crafted.valid()) {
      EXPECT_NO_THROW(decode_frame(crafted.bytes, kCorpusMaxFrameBytes));
      continue;
    }
    try {
      decode_frame(crafted.bytes, kCorpusMaxFrameBytes);
      ADD_FAILURE() << "accepted";
    } catch (const FrameRejected& e) {
      EXPECT_EQ(e.kind(), FrameRejected::Kind::malformed);
      EXPECT_NE(std::string(e.what()).find(crafted.reason), std::string::npos) << e.what();
    }
  }
}

TEST(FrameDecoder, LengthLimitIsConfigurable) {
  std::vector<std::byte> frame;
  for (const auto& c : crafted_frames()) {
    if (c.name == "valid_request_tensor") frame = c.bytes;
  }
  std::uint64_t payload = frame.size() - kHeaderBytes;
  EXPECT_NO_THROW(decode_frame(frame, payload));
  EXPECT_THROW(decode_frame(frame, payload - 1), FrameRejected);
}

TEST(FrameDecoder, RankIsCheckedBeforeDimensionsAreRead) {
  std::array<std::byte, kDescriptorPrefixBytes> prefix{};
  prefix[4] = std::byte{0xe8};  // 1000, little-endian
  prefix[5] = std::byte{0x03};
  EXPECT_THROW(decode_descriptor_prefix(prefix), FrameRejected);
  prefix[4] = std::byte{8};
  prefix[5] = std::byte{0};
  EXPECT_EQ(decode_descriptor_prefix(prefix), 8);
}

// A cheap in-process stand-in for the fuzzer: random mutations of the crafted frames must
// decode consistently or be rejected, never crash or throw anything else.
TEST(FrameDecoder, SurvivesRandomMutations) {
  std::mt19937 rng(1234);
  auto frames = crafted_frames();
  for (int i = 0; i < 20000; ++i) {
    std::vector<std::byte> bytes = frames[rng() % frames.size()].bytes;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits && !bytes.empty(); ++e) {
      switch (rng() % 3) {
        case 0: bytes[rng() % bytes.size()] = static_cast<std::byte>(rng()); break;
        case 1: bytes.resize(rng() % (bytes.size() + 1)); break;
        case 2: bytes.insert(bytes.begin() + static_cast<long>(rng() % bytes.size()),
                             static_cast<std::byte>(rng()));
                break;
      }
    }
    try {
      FrameView view = decode_frame(bytes, kCorpusMaxFrameBytes);
      ASSERT_EQ(view.body.size(), view.header.body_length);
      if (view.tensor) {
        ASSERT_EQ(view.tensor_bytes.size(), view.tensor->nbytes);
      }
    } catch (const FrameRejected&) {
    }
  }
}

}  // namespace
}  // namespace trib::net
