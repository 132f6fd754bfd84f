// Seeded permutations that need no saved generator state: permutation `stream` of a seed is a
// pure function of (seed, stream), so a position only has to record which stream (an epoch, a
// shuffle window) it was in, and every worker computes the same order without talking.
#pragma once

#include <cstdint>
#include <vector>

namespace trib::data {

// A Fisher-Yates shuffle of 0..size-1 driven by Rng(seed).fork(stream).
std::vector<std::int64_t> seeded_permutation(std::int64_t size, std::uint64_t seed,
                                             std::uint64_t stream);

}  // namespace trib::data
