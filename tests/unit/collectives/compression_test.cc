// The 16-bit wire formats: round trips within half a unit in the last place (ties to
// even), special values kept; and compressed allreduces within that tolerance of the exact
// sum, every rank still identical.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>

#include "collectives/reduce_kernels.h"
#include "trib/collectives/allreduce.h"
#include "unit/collectives/thread_ranks.h"

namespace trib::collectives {
namespace {

using detail::Wire16;

float round_trip(Wire16 f, float x) {
  std::uint16_t h;
  float y;
  detail::pack16(f, &x, &h, 1);
  detail::unpack16(f, &h, &y, 1);
  return y;
}

TEST(Compression, RoundTripsWithinHalfAnUlp) {
  for (float x = -1000.0f; x < 1000.0f; x += 0.37f) {
    EXPECT_LE(std::abs(round_trip(Wire16::bf16, x) - x), std::abs(x) * 0x1p-8f) << x;
    EXPECT_LE(std::abs(round_trip(Wire16::f16, x) - x), std::abs(x) * 0x1p-11f) << x;
  }
  for (float x : {0.0f, -0.0f, 1.0f, -2.5f, 0.5f}) {  // exact in both formats
    EXPECT_EQ(std::bit_cast<std::uint32_t>(round_trip(Wire16::bf16, x)), std::bit_cast<std::uint32_t>(x));
    EXPECT_EQ(std::bit_cast<std::uint32_t>(round_trip(Wire16::f16, x)), std::bit_cast<std::uint32_t>(x));
  }
}

TEST(Compression, TiesGoToEven) {
  // 1 + 2^-8 lies halfway between bf16's 1 and 1 + 2^-7: the even one (1) wins.
  EXPECT_EQ(round_trip(Wire16::bf16, 1.0f + 0x1p-8f), 1.0f);
  EXPECT_EQ(round_trip(Wire16::bf16, 1.0f + 3 * 0x1p-8f), 1.0f + 0x1p-6f);
  EXPECT_EQ(round_trip(Wire16::f16, 1.0f + 0x1p-11f), 1.0f);
}

TEST(Compression, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  for (Wire16 f : {Wire16::bf16, Wire16::f16}) {
    EXPECT_EQ(round_trip(f, inf), inf);
    EXPECT_EQ(round_trip(f, -inf), -inf);
    EXPECT_TRUE(std::isnan(round_trip(f, nan)));
  }
  EXPECT_EQ(round_trip(Wire16::f16, 70000.0f), inf);                        // beyond fp16's range
  EXPECT_NEAR(round_trip(Wire16::f16, 3e-6f), 3e-6f, 0x1p-25f);             // an fp16 subnormal
  EXPECT_NEAR(round_trip(Wire16::bf16, 1e30f), 1e30f, 1e30f * 0x1p-8f);  // bf16 keeps fp32's range
}

TEST(Compression, CompressedAllreduceStaysWithinToleranceAndIdentical) {
  for (auto algorithm : {AllreduceAlgorithm::ring, AllreduceAlgorithm::direct}) {
    for (Compression c : {Compression::bf16, Compression::fp16}) {
      const int n = 3;
      const std::int64_t count = 10007;
      testing::ThreadGroup g(n, GroupOptions{.segment_bytes = 2048});
      std::vector<Tensor> t;
      for (int r = 0; r < n; ++r) {
        t.push_back(Tensor::empty(DType::f32, Shape{count}));
        for (std::int64_t i = 0; i < count; ++i) t.back().data<float>()[i] = std::sin(0.01f * i + r);
      }
      g.run_ok([&](int r, Group& group) {
        allreduce(group, t[static_cast<std::size_t>(r)], {.average = true, .compression = c, .algorithm = algorithm});
      });
      const float tolerance = c == Compression::bf16 ? 2e-2f : 3e-3f;
      for (std::int64_t i = 0; i < count; ++i) {
        float exact = 0;
        for (int r = 0; r < n; ++r) exact += std::sin(0.01f * i + r) / n;
        ASSERT_NEAR(t[0].data<float>()[i], exact, tolerance) << compression_name(c) << " element " << i;
        for (int r = 1; r < n; ++r) ASSERT_EQ(t[static_cast<std::size_t>(r)].data<float>()[i], t[0].data<float>()[i]);
      }
    }
  }
}

}  // namespace
}  // namespace trib::collectives
