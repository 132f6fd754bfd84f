// libFuzzer entry point for the frame decoder: any byte string must either decode into a
// frame whose lengths are all consistent, or be refused with FrameRejected. A crash, a
// sanitizer report, any other exception or an inconsistent accepted frame is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "net/frame_decoder.h"

namespace {

// Small enough that the fuzzer reaches the limit checks, large enough for real frames.
constexpr std::uint64_t kMaxFrameBytes = std::uint64_t{1} << 20;

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  try {
    trib::net::FrameView view = trib::net::decode_frame(bytes, kMaxFrameBytes);
    check(view.header.payload_length <= kMaxFrameBytes);
    check(view.body.size() == view.header.body_length);
    if (view.tensor) {
      check(view.tensor->shape.rank() <= trib::Shape::kMaxRank);
      check(view.tensor_bytes.size() == view.tensor->nbytes);
    } else {
      check(view.tensor_bytes.empty());
    }
  } catch (const trib::net::FrameRejected&) {
    // Refused: the expected outcome for most inputs.
  }
  return 0;
}
