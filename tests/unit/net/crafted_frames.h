// Hand-made frames, valid and malformed, that exercise each check of the frame decoder.
// They are the fuzz corpus (tests/fuzz/corpus/NAME.bin), are decoded by the unit tests,
// and are sent over authenticated sockets to show the server closes just that connection.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace trib::net::testing {

struct CraftedFrame {
  std::string name;                 // file name stem; "valid_*" frames must decode
  std::vector<std::byte> bytes;     // header + payload as sent on the wire (MAC zero)
  std::string reason;               // for invalid frames: a fragment of the rejection
  bool valid() const { return name.starts_with("valid_"); }
};

std::vector<CraftedFrame> crafted_frames();

// The frame-size limit the corpus is decoded with (same as the fuzz target's).
inline constexpr std::uint64_t kCorpusMaxFrameBytes = std::uint64_t{1} << 20;

}  // namespace trib::net::testing
