// A NumPy .npy file (format 1.0, little-endian f32, C order): how `trib eval --outputs`
// hands its logits to a Python check without a parser of our own on that side.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace trib::train {

// Writes `values` as an array of shape `dims`; throws InvalidArgument if they disagree,
// IoError naming the file if it cannot be written.
void write_npy_f32(const std::filesystem::path& path, const std::vector<float>& values,
                   const std::vector<std::int64_t>& dims);

}  // namespace trib::train
