// libFuzzer entry point for decoded parameter-server requests (see ps_request_harness.h):
// a crash, a sanitizer report (an over-read of the tensor or the body) or any exception but
// a refusal is a bug.
#include "ps_request_harness.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  trib::ps::fuzz::serve_request(data, size);
  return 0;
}
