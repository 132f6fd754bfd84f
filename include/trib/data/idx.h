// Readers for IDX files, the format of MNIST and Fashion-MNIST: a 4-byte magic (0, 0, type
// 0x08 for unsigned bytes, number of dimensions), each dimension as a big-endian u32, then the
// bytes. Gzipped files (magic 1f 8b) are decompressed on the fly.
//
// Every malformed input is an error of one line naming the file: missing (NotFound), wrong
// magic, truncated or too long (Corruption, with expected and actual byte counts), images and
// labels that disagree, or a label outside [0, num_classes) (InvalidArgument).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trib/data/in_memory_dataset.h"

namespace trib::data {

struct IdxArray {
  std::vector<std::int64_t> dims;
  std::vector<std::uint8_t> values;  // row-major
};

// Reads an IDX file of unsigned bytes with `rank` dimensions.
IdxArray read_idx(const std::string& path, int rank);

struct IdxOptions {
  // Labels must lie in [0, num_classes); 0 skips the check.
  int num_classes = 0;
  // Pixels become float(byte) / 255, in [0, 1]; otherwise float(byte), in [0, 255].
  bool scale_to_unit = true;
  // Examples of shape [rows * cols] instead of [rows, cols].
  bool flatten = false;
};

// An images file ([N, rows, cols]) and its labels file ([N]) as one dataset, with the pixels
// kept as bytes.
InMemoryDataset load_idx_pair(const std::string& images_path, const std::string& labels_path,
                              IdxOptions options = {});

}  // namespace trib::data
