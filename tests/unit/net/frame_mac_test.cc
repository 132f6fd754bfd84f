#include "net/frame_mac.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

namespace trib::net {
namespace {

class FrameMacTest : public ::testing::TestWithParam<MacAlgorithm> {
 protected:
  SessionKey key(int seed) {
    SessionKey k;
    for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<std::byte>(seed + i);
    return k;
  }
  std::vector<std::byte> data(std::size_t n) {
    std::vector<std::byte> d(n);
    for (std::size_t i = 0; i < n; ++i) d[i] = static_cast<std::byte>(i * 31 + 7);
    return d;
  }
  MacTag tag(FrameMac& mac, std::uint64_t seq, std::span<const std::byte> bytes,
             std::size_t piece) {
    mac.begin(seq);
    for (std::size_t off = 0; off < bytes.size(); off += piece) {
      mac.update(bytes.subspan(off, std::min(piece, bytes.size() - off)));
    }
    return mac.finish();
  }
};

TEST_P(FrameMacTest, StreamingOverPiecesEqualsOneShot) {
  FrameMac mac(GetParam(), key(1));
  auto bytes = data(100'003);
  MacTag whole = tag(mac, 5, bytes, bytes.size());
  EXPECT_TRUE(tags_equal(whole, tag(mac, 5, bytes, 7)));
  EXPECT_TRUE(tags_equal(whole, tag(mac, 5, bytes, 65536)));
}

TEST_P(FrameMacTest, SequenceKeyAndContentEachChangeTheTag) {
  FrameMac mac(GetParam(), key(1));
  FrameMac other_key(GetParam(), key(2));
  auto bytes = data(1000);
  MacTag base = tag(mac, 1, bytes, 1000);
  // HMAC binds the sequence through the header bytes, which this test does not vary.
  if (GetParam() != MacAlgorithm::hmac_sha256) {
    EXPECT_FALSE(tags_equal(base, tag(mac, 2, bytes, 1000)));
  }
  EXPECT_FALSE(tags_equal(base, tag(other_key, 1, bytes, 1000)));
  bytes[500] ^= std::byte{1};
  EXPECT_FALSE(tags_equal(base, tag(mac, 1, bytes, 1000)));
}

TEST_P(FrameMacTest, HeaderMacFieldIsExcluded) {
  FrameHeader h;
  h.sequence = 3;
  HeaderBytes a = header_for_mac(h);
  h.mac[0] = std::byte{0xff};
  EXPECT_EQ(a, header_for_mac(h));
}

INSTANTIATE_TEST_SUITE_P(AllAlgorithms, FrameMacTest,
                         ::testing::Values(MacAlgorithm::poly1305, MacAlgorithm::gmac_aes256,
                                           MacAlgorithm::hmac_sha256),
                         [](const auto& info) {
                           std::string name(mac_algorithm_name(info.param));
                           std::erase(name, '-');
                           return name;
                         });

}  // namespace
}  // namespace trib::net
