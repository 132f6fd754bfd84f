// The body of every collective request: which operation and which piece of it the asker
// wants, and the asker's own view of the operation (its tensor's dtype and shape, root,
// reduction options). The server compares that view with its own before any data moves,
// so a mismatch is reported with both ranks' shapes. Little-endian, field by field.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "trib/core/dtype.h"
#include "trib/core/shape.h"

namespace trib::collectives::detail {

// The application opcode our requests carry (net::Message::method): "COLL".
inline constexpr std::uint32_t kCollectiveMethod = 0x4c4c4f43;
inline constexpr std::uint8_t kWireVersion = 1;

enum class Family : std::uint8_t {
  hello = 1,  // group formation: "I am rank r of a group of N, generation g"
  abort = 2,  // one-way: "the group failed; here is why"
  allreduce = 3,
  broadcast = 4,
  allgather = 5,
  barrier = 6,
  leave = 7,  // "I am done with the group": my connections closing next is not a failure
};
std::string_view family_name(Family family);

// Which algorithm of a family (ring or direct allreduce; allgather's size exchange or data).
enum class Algorithm : std::uint8_t { none = 0, ring = 1, direct = 2, chain = 3, sizes = 4, dissemination = 5 };
std::string_view algorithm_name(Algorithm algorithm);

struct Request {
  Family family = Family::hello;
  Algorithm algorithm = Algorithm::none;
  std::int32_t from = 0;           // the asker's rank
  std::uint64_t generation = 0;    // the group's generation; others are refused
  std::uint64_t op = 0;            // operation sequence number within the group
  std::uint32_t step = 0;          // algorithm step (ring step, round)
  std::uint32_t segment = 0;       // pipeline segment within the step
  std::uint32_t param = 0;         // family-specific: root, reduction options, group size
  DType dtype = DType::f32;        // the asker's tensor
  Shape shape;
  std::string text;                // hello: unused; abort: the reason
};

// The longest text a request may carry (an abort's reason); encode() cuts longer ones.
inline constexpr std::size_t kMaxTextBytes = 4096;
// The most payload bytes any collective request can legitimately have: requests carry no
// tensor (data travels in replies, into buffers the asker sized), so this is the fixed fields,
// the most dimensions, the longest text and an empty tensor's descriptor. Endpoints refuse a
// bigger request from its frame header, before reading it (Handlers::request_limit).
std::uint64_t max_request_bytes();

std::string encode(const Request& request);
// Throws InvalidArgument on a malformed body (a peer of another version, or garbage).
Request decode(std::string_view body);

}  // namespace trib::collectives::detail
