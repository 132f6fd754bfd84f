// libFuzzer entry point for the body of every collective request (src/collectives/wire.h).
// Any byte string must either decode into a request whose shape is valid and which encodes
// back to exactly the same bytes, or be refused with InvalidArgument. A crash, a sanitizer
// report, any other exception or a lossy round trip is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "collectives/wire.h"
#include "trib/core/error.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  try {
    trib::collectives::detail::Request r = trib::collectives::detail::decode(body);
    check(r.shape.rank() <= trib::Shape::kMaxRank);
    check(r.shape.numel() >= 0);
    check(trib::collectives::detail::encode(r) == body);
  } catch (const trib::InvalidArgument&) {
    // Refused: the expected outcome for most inputs.
  }
  return 0;
}
