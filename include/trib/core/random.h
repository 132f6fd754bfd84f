// Counter-based random numbers (Philox4x32-10): the same seed gives the same numbers on every
// run, every machine and every thread count, and a generator's whole state is two integers,
// which is what a checkpoint stores.
#pragma once

#include <array>
#include <cstdint>

namespace trib {

struct RngState {
  std::uint64_t seed = 0;
  std::uint64_t counter = 0;  // number of 4-word blocks drawn so far
  std::uint32_t buffered = 0;  // words of the last block not yet used (0..3)
  bool operator==(const RngState&) const = default;
};

class Rng {
 public:
  explicit Rng(std::uint64_t seed = 0, std::uint64_t counter = 0) : state_{seed, counter} {}
  explicit Rng(RngState state) { set_state(state); }

  std::uint32_t next_u32();
  std::uint64_t next_u64();
  // Uniform in [0, 1).
  float uniform();
  // Uniform in [lo, hi).
  float uniform(float lo, float hi) { return lo + (hi - lo) * uniform(); }
  // Standard normal (Box-Muller).
  float normal();
  // Uniform integer in [0, n); n > 0.
  std::uint64_t below(std::uint64_t n);

  // A generator for an independent stream derived from this one's seed (for example one per
  // layer or per worker), without drawing from this one.
  Rng fork(std::uint64_t stream) const;

  RngState state() const { return {state_.seed, state_.counter, static_cast<std::uint32_t>(buffered_)}; }
  void set_state(RngState s);

  // The raw Philox block for (seed, counter): a pure function, used for stateless masks.
  static std::array<std::uint32_t, 4> block(std::uint64_t seed, std::uint64_t counter);

 private:
  RngState state_;
  std::array<std::uint32_t, 4> buffer_{};
  int buffered_ = 0;  // words left in buffer_
};

}  // namespace trib
