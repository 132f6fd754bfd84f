// What a primary parameter server sends the backup of its shard (strategy.ps_replicas: 1,
// docs/fault_tolerance.md, "Hot backups"): every request and membership event that changed
// its state, in the order it applied them, so that the backup holds the same values, slots,
// clocks, rounds, roster and data claims. Frames travel with net::Message::method
// kReplicaMethod on the backup's own listener; a request's frame carries the worker's PS body
// unchanged and its tensor as the message's. Layout (little-endian): kind u8, 3 zero bytes,
// worker i32, number i64, address length u32, the address, then (request) the PS body.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace trib::ps::replica {

// "PR\0\x02": a primary's forward to its backup, and the backup's empty acknowledgement.
inline constexpr std::uint32_t kReplicaMethod = 0x02005250;
inline constexpr std::size_t kFixedBytes = 20;
inline constexpr std::size_t kMaxAddressBytes = 256;

enum class Kind : std::uint8_t {
  request = 1,  // a worker's or the chief's request the primary applied (init, restore, push, done, claim)
  noted = 2,    // a worker seen on a new connection (its first, a relaunch, or a vacant index taken)
  closed = 3,   // the connection of the worker at `address` closed: it is lost
  lost = 4,     // the membership says `worker` is lost in generation `number`
  joined = 5,   // the membership holds `worker` in incarnation `number`
  // A new backup's first frame: the primary's whole state (body: src/ps/ps_server_state.cc)
  // as it stood under its lock, and the shard's epoch (`number`). The frames that follow
  // build on it.
  snapshot = 6,
};
inline constexpr std::uint8_t kMaxKind = 6;

struct Frame {
  Kind kind = Kind::request;
  std::int32_t worker = 0;
  std::int64_t number = 0;  // lost: the generation; joined: the incarnation; snapshot: the shard's epoch
  std::string address;      // request, noted, closed: the worker's connection on the primary
  std::string body;         // request: the PS body as the primary received it; snapshot: the state
};

// The backup's answer: empty when it applied the frame. A backup that took the shard over
// (or a newer holder of it) refuses its former primary's frames with a refusal naming the
// shard's epoch now: the sender was replaced, and must acknowledge nothing more.
inline constexpr std::uint8_t kRefusedReplaced = 1;
inline constexpr std::size_t kRefusalBytes = 9;  // status u8, epoch i64
std::string encode_refusal(std::int64_t epoch);
// The epoch a refusal names; nullopt for an acknowledgement (empty). Throws InvalidArgument
// for anything else.
std::optional<std::int64_t> decode_refusal(std::string_view answer);

std::string encode(const Frame& frame);
// Throws InvalidArgument naming the field for bytes that are not a well-formed frame.
Frame decode(std::string_view bytes);
// As decode, but the body is not copied: `body` views the rest of `bytes` (a snapshot's state
// is large), and the returned frame's body is empty.
Frame decode_head(std::string_view bytes, std::string_view& body);

}  // namespace trib::ps::replica
