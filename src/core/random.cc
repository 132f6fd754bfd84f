#include "trib/core/random.h"

#include <cmath>
#include <numbers>

namespace trib {
namespace {

constexpr std::uint32_t kMul0 = 0xD2511F53, kMul1 = 0xCD9E8D57;
constexpr std::uint32_t kWeyl0 = 0x9E3779B9, kWeyl1 = 0xBB67AE85;

inline void mulhilo(std::uint32_t a, std::uint32_t b, std::uint32_t& hi, std::uint32_t& lo) {
  std::uint64_t p = static_cast<std::uint64_t>(a) * b;
  hi = static_cast<std::uint32_t>(p >> 32);
  lo = static_cast<std::uint32_t>(p);
}

}  // namespace

std::array<std::uint32_t, 4> Rng::block(std::uint64_t seed, std::uint64_t counter) {
  std::array<std::uint32_t, 4> c = {static_cast<std::uint32_t>(counter),
                                    static_cast<std::uint32_t>(counter >> 32), 0, 0};
  std::uint32_t k0 = static_cast<std::uint32_t>(seed), k1 = static_cast<std::uint32_t>(seed >> 32);
  for (int round = 0; round < 10; ++round) {
    std::uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kMul0, c[0], hi0, lo0);
    mulhilo(kMul1, c[2], hi1, lo1);
    c = {hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0};
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return c;
}

std::uint32_t Rng::next_u32() {
  if (buffered_ == 0) {
    buffer_ = block(state_.seed, state_.counter++);
    buffered_ = 4;
  }
  return buffer_[4 - buffered_--];
}

std::uint64_t Rng::next_u64() {
  std::uint64_t hi = next_u32();
  return (hi << 32) | next_u32();
}

float Rng::uniform() { return static_cast<float>(next_u32() >> 8) * 0x1.0p-24f; }

float Rng::normal() {
  // Box-Muller in double so that the result is the same wherever libm rounds alike.
  double u1 = (static_cast<double>(next_u32()) + 1.0) * 0x1.0p-32;
  double u2 = static_cast<double>(next_u32()) * 0x1.0p-32;
  return static_cast<float>(std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2));
}

std::uint64_t Rng::below(std::uint64_t n) {
  // Rejection sampling keeps the distribution exactly uniform.
  std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  std::uint64_t x;
  do x = next_u64();
  while (x >= limit);
  return x % n;
}

Rng Rng::fork(std::uint64_t stream) const {
  auto b = block(state_.seed ^ 0x5851F42D4C957F2DULL, stream);
  return Rng((static_cast<std::uint64_t>(b[0]) << 32) | b[1]);
}

void Rng::set_state(RngState s) {
  state_ = {s.seed, s.counter, 0};
  buffered_ = s.buffered > 3 ? 0 : static_cast<int>(s.buffered);
  if (buffered_ > 0 && state_.counter > 0) buffer_ = block(state_.seed, state_.counter - 1);
  else buffered_ = 0;
}

}  // namespace trib
