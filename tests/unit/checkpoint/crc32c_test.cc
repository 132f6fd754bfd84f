#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "checkpoint/crc32c_impl.h"
#include "checkpoint/crc32c.h"

namespace trib {
namespace {

using checkpoint_detail::cpu_has_sse42;

std::uint32_t crc_of(const std::string& s) { return crc32c(s.data(), s.size()); }

// Runs one implementation with the same pre- and post-inversion as trib::crc32c.
template <typename Impl>
std::uint32_t crc_with(Impl impl, const std::vector<unsigned char>& bytes) {
  return ~impl(0xFFFFFFFFu, bytes.data(), bytes.size());
}

// The check value of the CRC catalogue and the iSCSI vectors of RFC 3720, appendix B.4.
struct Vector {
  std::vector<unsigned char> bytes;
  std::uint32_t crc;
};
std::vector<Vector> known_vectors() {
  std::vector<unsigned char> ascending(32), descending(32);
  for (int i = 0; i < 32; ++i) {
    ascending[i] = static_cast<unsigned char>(i);
    descending[i] = static_cast<unsigned char>(31 - i);
  }
  const std::string check = "123456789";
  return {{{check.begin(), check.end()}, 0xE3069283u},
          {std::vector<unsigned char>(32, 0x00), 0x8A9136AAu},
          {std::vector<unsigned char>(32, 0xFF), 0x62A8AB43u},
          {ascending, 0x46DD794Eu},
          {descending, 0x113FDB5Cu},
          {{}, 0x00000000u}};
}

TEST(Crc32c, KnownVectors) {
  EXPECT_EQ(crc_of("123456789"), 0xE3069283u);
  for (const Vector& v : known_vectors()) EXPECT_EQ(crc32c(v.bytes.data(), v.bytes.size()), v.crc);
}

TEST(Crc32c, PortableImplementationMatchesTheVectors) {
  for (const Vector& v : known_vectors()) EXPECT_EQ(crc_with(checkpoint_detail::crc32c_portable, v.bytes), v.crc);
}

TEST(Crc32c, Sse42ImplementationMatchesTheVectors) {
  if (!cpu_has_sse42()) GTEST_SKIP() << "this CPU has no SSE4.2";
  for (const Vector& v : known_vectors()) EXPECT_EQ(crc_with(checkpoint_detail::crc32c_sse42, v.bytes), v.crc);
}

TEST(Crc32c, ImplementationsAgreeOnEveryLengthAndAlignment) {
  if (!cpu_has_sse42()) GTEST_SKIP() << "this CPU has no SSE4.2";
  std::vector<unsigned char> data(300);
  for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>(i * 131 + 7);
  for (std::size_t offset = 0; offset < 8; ++offset) {
    for (std::size_t n = 0; n + offset <= data.size(); n += 13) {
      EXPECT_EQ(checkpoint_detail::crc32c_sse42(~0u, data.data() + offset, n),
                checkpoint_detail::crc32c_portable(~0u, data.data() + offset, n))
          << "offset " << offset << " length " << n;
    }
  }
}

TEST(Crc32c, ContinuesFromAPreviousResult) {
  EXPECT_EQ(crc32c("56789", 5, crc_of("1234")), 0xE3069283u);
}

}  // namespace
}  // namespace trib
