// libFuzzer entry point for the coordinator's request bodies (src/cluster/store_protocol.h):
// the first byte picks the method, the rest is the body. Any input must either decode into
// a request within every bound, or be refused with InvalidArgument. A crash, a sanitizer
// report, any other exception or an accepted request over a bound is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "cluster/store_protocol.h"
#include "trib/core/error.h"

namespace {

namespace proto = trib::cluster::proto;

void check(bool ok) {
  if (!ok) std::abort();
}

constexpr std::uint32_t kMethods[] = {proto::kStoreSet, proto::kStoreGet, proto::kStoreAdd,
                                      proto::kJoin,     proto::kLeave,    proto::kShutdown};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  std::uint32_t method = kMethods[data[0] % std::size(kMethods)];
  std::string_view body(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    proto::Request r = proto::decode_request(method, body);
    check(r.method == method);
    check(r.key.size() <= proto::kMaxKeyBytes);
    check(r.value.size() <= proto::kMaxValueBytes);
    check(r.role.size() <= proto::kMaxRoleBytes);
    check(r.index >= -1);
  } catch (const trib::InvalidArgument&) {
    // Refused: the expected outcome for most inputs.
  }
  return 0;
}
