#include "crafted_frames.h"

#include <cstring>

#include "net/little_endian.h"
#include "trib/core/dtype.h"
#include "net/wire_format.h"

namespace trib::net::testing {
namespace {

using Bytes = std::vector<std::byte>;

FrameHeader header(MessageType type, std::uint64_t payload, std::uint32_t body = 0,
                   bool tensor = false) {
  FrameHeader h;
  h.type = static_cast<std::uint8_t>(type);
  h.flags = tensor ? kFlagHasTensor : 0;
  h.tag = 7;
  h.sequence = 1;
  h.body_length = body;
  h.payload_length = payload;
  return h;
}

Bytes descriptor(std::uint8_t dtype, std::uint32_t rank, const std::vector<std::int64_t>& dims) {
  Bytes d(kDescriptorPrefixBytes + 8 * dims.size());
  d[0] = static_cast<std::byte>(dtype);
  store_le(d.data() + 4, rank);
  for (std::size_t i = 0; i < dims.size(); ++i) store_le(d.data() + 8 + 8 * i, dims[i]);
  return d;
}

Bytes frame(const FrameHeader& h, const Bytes& payload = {}) {
  HeaderBytes hb = encode_header(h);
  Bytes out(hb.begin(), hb.end());
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

Bytes concat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Bytes text(std::string_view s) {
  Bytes b(s.size());
  if (!s.empty()) std::memcpy(b.data(), s.data(), s.size());
  return b;
}

Bytes tensor_frame(std::uint8_t dtype, const std::vector<std::int64_t>& dims,
                   std::size_t data_bytes, std::string_view body = "") {
  Bytes payload = concat(descriptor(dtype, static_cast<std::uint32_t>(dims.size()), dims),
                         text(body));
  payload.resize(payload.size() + data_bytes, std::byte{0x5a});
  return frame(header(MessageType::request, payload.size(),
                      static_cast<std::uint32_t>(body.size()), true),
               payload);
}

}  // namespace

std::vector<CraftedFrame> crafted_frames() {
  const auto f32 = static_cast<std::uint8_t>(DType::f32);
  const auto i64 = static_cast<std::uint8_t>(DType::i64);
  std::vector<CraftedFrame> out;
  out.push_back({"valid_heartbeat", frame(header(MessageType::heartbeat, 0)), ""});
  out.push_back({"valid_request_body",
                 frame(header(MessageType::request, 5, 5), text("hello")), ""});
  out.push_back({"valid_request_tensor", tensor_frame(f32, {2, 3}, 24, "key"), ""});
  out.push_back({"valid_scalar_tensor", tensor_frame(i64, {}, 8), ""});
  out.push_back({"valid_empty_tensor", tensor_frame(f32, {0, 5}, 0), ""});

  out.push_back({"bad_length_ffffffff",
                 frame(header(MessageType::request, 0xFFFFFFFFull, 0)), "limit is"});
  {
    // 1,000 dimensions' worth of bytes behind a descriptor that claims them.
    std::vector<std::int64_t> dims(1000, 1);
    Bytes payload = descriptor(f32, 1000, dims);
    out.push_back({"bad_rank_1000",
                   frame(header(MessageType::request, payload.size(), 0, true), payload),
                   "rank 1000"});
  }
  {
    Bytes payload = descriptor(f32, 2, {std::int64_t{1} << 40, std::int64_t{1} << 40});
    out.push_back({"bad_dims_overflow",
                   frame(header(MessageType::request, payload.size(), 0, true), payload),
                   "overflow"});
  }
  {
    Bytes payload = descriptor(f32, 3, {4, -1, 4});
    out.push_back({"bad_negative_dim",
                   frame(header(MessageType::request, payload.size(), 0, true), payload),
                   "negative"});
  }
  {
    // Consistent lengths would need 4 MB of data; the frame claims only the descriptor.
    Bytes payload = descriptor(f32, 1, {1'000'000});
    out.push_back({"bad_tensor_bytes_mismatch",
                   frame(header(MessageType::request, payload.size(), 0, true), payload),
                   "payload bytes"});
  }
  out.push_back({"bad_unknown_type", frame(header(static_cast<MessageType>(99), 0)),
                 "unknown message type 99"});
  out.push_back({"bad_dtype", tensor_frame(7, {2}, 8), "unknown dtype 7"});
  {
    FrameHeader h = header(MessageType::request, 0);
    h.magic = 0x50545448;  // "HTTP": someone pointed a browser at us
    out.push_back({"bad_magic", frame(h), "magic"});
  }
  {
    FrameHeader h = header(MessageType::request, 0);
    h.version = 9;
    out.push_back({"bad_version", frame(h), "wire version 9"});
  }
  {
    FrameHeader h = header(MessageType::request, 0);
    h.flags = 0x8000;
    out.push_back({"bad_flags", frame(h), "flags"});
  }
  out.push_back({"bad_body_exceeds_payload",
                 frame(header(MessageType::request, 4, 9), text("abcd")), "body length"});
  {
    Bytes payload = concat(descriptor(f32, 1, {2}), Bytes(8));
    payload[2] = std::byte{1};
    out.push_back({"bad_descriptor_reserved",
                   frame(header(MessageType::request, payload.size(), 0, true), payload),
                   "reserved"});
  }
  out.push_back({"bad_truncated_payload",
                 Bytes(frame(header(MessageType::request, 100, 100), text("only ten b"))),
                 "header says 100"});
  return out;
}

}  // namespace trib::net::testing
