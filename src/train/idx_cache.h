// A decoded copy of an IDX image/label pair, kept in a cache directory so that a process that
// starts again (a relaunched worker, the next run) maps the bytes instead of inflating the gzip
// files again. Decoding Fashion-MNIST costs most of a worker's start (about 0.8 s of CPU, more
// than the rest of it together: docs/fault_tolerance/membership.md); mapping its cache costs a
// checksum over 55 MB.
//
// The cache is never trusted blindly. A cache file is used only if its header names the same
// source paths, each source still has the size and modification time (ns) it had when it was
// decoded, the file is exactly as long as its header says, and the CRC32C of the header and of
// the data both match. Anything else (a changed source, a torn or damaged file, another
// format version) decodes the sources again and replaces the cache file. Writing it is
// best-effort: an unwritable directory only means no cache. A cache file is replaced by
// rename, so a process that has it mapped keeps the old one intact.
#pragma once

#include <string>

#include "trib/data/in_memory_dataset.h"

namespace trib::train {

struct IdxCacheOptions {
  // Where decoded copies live; "" reads the sources every time.
  std::string dir;
  int num_classes = 0;          // labels must lie in [0, num_classes); 0: no check
  float byte_scale = 1.0f;      // a gathered byte becomes float(byte) * byte_scale
};

// How one load went: a hit, or why the cache was not used ("no cache file", "the source
// changed", ..., "off") and, when writing the new copy failed, why.
struct IdxCacheOutcome {
  bool hit = false;
  std::string detail;
};

// The pair as one dataset of [rows, cols] byte examples, through the cache when it is valid.
// Errors in the sources are those of data::load_idx_pair.
data::InMemoryDataset load_idx_cached(const std::string& images, const std::string& labels,
                                      const IdxCacheOptions& options, IdxCacheOutcome* outcome = nullptr);

// data.cache_dir's default: $XDG_CACHE_HOME/tributary/idx, else $HOME/.cache/tributary/idx,
// else "" (no cache).
std::string default_idx_cache_dir();

}  // namespace trib::train
