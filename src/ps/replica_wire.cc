#include "ps/replica_wire.h"

#include <cstring>

#include "trib/core/error.h"

namespace trib::ps::replica {

namespace {

template <typename T>
void put(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));  // the wire is little-endian, as every supported host
  out.append(b, sizeof(T));
}

template <typename T>
T get(std::string_view bytes, std::size_t at) {
  T v;
  std::memcpy(&v, bytes.data() + at, sizeof(T));
  return v;
}

}  // namespace

std::string encode_refusal(std::int64_t epoch) {
  std::string out;
  put<std::uint8_t>(out, kRefusedReplaced);
  put<std::int64_t>(out, epoch);
  return out;
}

std::optional<std::int64_t> decode_refusal(std::string_view answer) {
  if (answer.empty()) return std::nullopt;
  TRIB_CHECK(answer.size() == kRefusalBytes && get<std::uint8_t>(answer, 0) == kRefusedReplaced, InvalidArgument,
             "a backup's answer of {} bytes is neither an acknowledgement nor a refusal", answer.size());
  return get<std::int64_t>(answer, 1);
}

std::string encode(const Frame& f) {
  std::string out;
  out.reserve(kFixedBytes + f.address.size() + f.body.size());
  put<std::uint8_t>(out, static_cast<std::uint8_t>(f.kind));
  out.append(3, '\0');
  put<std::int32_t>(out, f.worker);
  put<std::int64_t>(out, f.number);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(f.address.size()));
  out += f.address;
  out += f.body;
  return out;
}

Frame decode(std::string_view bytes) {
  std::string_view body;
  Frame f = decode_head(bytes, body);
  f.body.assign(body);
  return f;
}

Frame decode_head(std::string_view bytes, std::string_view& body) {
  TRIB_CHECK(bytes.size() >= kFixedBytes, InvalidArgument, "replica frame of {} bytes, expected at least {}",
             bytes.size(), kFixedBytes);
  Frame f;
  const auto kind = get<std::uint8_t>(bytes, 0);
  TRIB_CHECK(kind >= 1 && kind <= kMaxKind, InvalidArgument, "replica frame of unknown kind {}", kind);
  f.kind = static_cast<Kind>(kind);
  TRIB_CHECK(bytes[1] == 0 && bytes[2] == 0 && bytes[3] == 0, InvalidArgument,
             "replica frame: reserved bytes are not zero");
  f.worker = get<std::int32_t>(bytes, 4);
  f.number = get<std::int64_t>(bytes, 8);
  const auto length = get<std::uint32_t>(bytes, 16);
  TRIB_CHECK(length <= kMaxAddressBytes && length <= bytes.size() - kFixedBytes, InvalidArgument,
             "replica frame: an address of {} bytes (at most {}, and {} present)", length, kMaxAddressBytes,
             bytes.size() - kFixedBytes);
  f.address.assign(bytes.substr(kFixedBytes, length));
  body = bytes.substr(kFixedBytes + length);
  TRIB_CHECK(f.kind == Kind::request || f.kind == Kind::snapshot || body.empty(), InvalidArgument,
             "replica frame of kind {} carries {} bytes of body", kind, body.size());
  return f;
}

}  // namespace trib::ps::replica
