// The body of every request between workers and parameter servers, and of their replies: a
// fixed 48-byte header, then (pushes of embedding rows) a table of sparse slices and their
// row ids as one i64 array, then (checkpoint requests and some replies) text. The values
// travel as the message's tensor: one flat f32 tensor per server per step, holding every
// slice it owns in placement order. Little-endian, field by field; docs/wire_protocol.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "trib/core/tensor.h"

namespace trib::ps::proto {

// net::Message::method of every PS request and reply: "PS" then the wire version.
inline constexpr std::uint32_t kPsMethod = 0x02005350;
// 2: the header carries the sender's generation (its incarnation), checked before decoding.
inline constexpr std::uint8_t kWireVersion = 2;

enum class Type : std::uint8_t {
  // init and restore carry the generation the job (re)starts in: a newer one than the server
  // holds rolls it back (every worker's clock, cursor and round start again from `step`).
  init = 1,     // chief -> ps: initial values (tensor), the step to start from
  restore = 2,  // chief -> ps: a checkpoint's state for your slices, one tensor per request (text: JSON)
  pull = 3,     // worker -> ps: the current values once the mode allows `step`
  push = 4,     // worker -> ps: gradients (or parameters, in averaging mode)
  save = 5,     // chief -> ps: your state for a checkpoint, one tensor per reply (text: JSON)
  stats = 6,    // chief -> ps: counters for the end-of-run report (reply text: JSON)
  done = 7,     // worker -> ps: it has taken its last step; wait for it no more
  claim = 8,    // worker -> ps 0 (data.assignment: dynamic): chunks of the data to read (text: JSON)
};
inline constexpr std::uint8_t kMaxType = 8;
std::string_view type_name(Type type);

enum Flags : std::uint16_t {
  kFlagReply = 1u << 0,  // a server's reply (same type as its request)
  kFlagReady = 1u << 1,  // pull reply: the values are attached; else ask again
  // push: this worker's gradients for `step` were not finite (NaN or Inf); no values travel.
  // Sync rounds holding one are skipped everywhere; async servers drop it and count it.
  kFlagNonFinite = 1u << 2,
  // pull reply (sync): the round this worker pushed to was skipped (a non-finite push):
  // nothing was applied, and the worker takes the same step again.
  kFlagSkipped = 1u << 3,
  // reply to a worker request (push, pull): the job rolled back past the sender's generation
  // (a lost server was restored from a checkpoint, docs/fault_tolerance.md), or this server
  // is a relaunched one that holds no state yet. Nothing was applied; the worker rewinds.
  kFlagRolledBack = 1u << 4,
  // pull (a plain read, step -1): the data cursor of the worker the request's text names (one
  // gone for good, whose data the others take) and its resume step, at once, without values.
  kFlagCursorOf = 1u << 5,
  // push: the first of a worker relaunched after it was lost between its pushes of one step to
  // several servers: its batch, read again from the oldest server's cursor, which the servers
  // that lacked it must apply even where its round closed without the worker (sync: added to
  // the round open there; ps_server_replay.cc).
  kFlagReplay = 1u << 6,
  // pull reply to a plain read: this worker's index was lost and is held again (a relaunched
  // process, or an evicted one back as a new member). The server logs the values it sent and
  // the worker those it got, whatever its step (one stopped before its first push resumes at 0).
  kFlagRejoined = 1u << 7,
  kKnownFlags = kFlagReply | kFlagReady | kFlagNonFinite | kFlagSkipped | kFlagRolledBack | kFlagCursorOf |
                kFlagReplay | kFlagRejoined,
};

// Host-side image of the fixed header.
struct Header {
  std::uint8_t version = kWireVersion;
  std::uint8_t type = 0;           // Type
  std::uint16_t flags = 0;         // Flags
  std::int32_t worker = 0;         // the asking worker (push, pull, done)
  std::int64_t step = 0;           // push/pull/init: the step; restore: the start step; pull reply: the
                                   // start step, or for a plain read (step -1) where this worker resumes
  std::int64_t version_seen = 0;   // push: the server version its values were pulled at; pull reply: the version
  std::uint32_t lr_bits = 0;       // push: the learning rate, an IEEE-754 f32
  std::uint32_t sparse_slices = 0; // push: entries in the sparse table that follows
  std::uint32_t wait_ms = 0;       // pull: longest the server may wait for the mode to allow `step`
  // push and claim: the worker's sequence number of its pushes (claims) to this server
  // (from 1), so that one retried at a backup after its primary was lost applies once
  // (strategy.ps_replicas); 0: none. Every other type: zero.
  std::uint32_t seq = 0;
  // Worker requests: the generation the sender joined the job in (its incarnation; 0 outside
  // a cluster), or the one of the last restore it rewound to, whichever is newer. A server
  // refuses, before decoding anything else, a request from an older incarnation of a worker
  // index than the one it knows; one older than its last restore is answered
  // kFlagRolledBack and applies nothing (docs/fault_tolerance.md). init and restore: the
  // generation the job continues in.
  std::int64_t generation = 0;
};

inline constexpr std::size_t kHeaderBytes = 48;
static_assert(std::is_standard_layout_v<Header>);
static_assert(sizeof(Header) == kHeaderBytes, "no padding: the struct is the wire layout");
static_assert(offsetof(Header, version) == 0);
static_assert(offsetof(Header, type) == 1);
static_assert(offsetof(Header, flags) == 2);
static_assert(offsetof(Header, worker) == 4);
static_assert(offsetof(Header, step) == 8);
static_assert(offsetof(Header, version_seen) == 16);
static_assert(offsetof(Header, lr_bits) == 24);
static_assert(offsetof(Header, sparse_slices) == 28);
static_assert(offsetof(Header, wait_ms) == 32);
static_assert(offsetof(Header, seq) == 36);
static_assert(offsetof(Header, generation) == 40);

// One entry of a push's sparse table: the slice (its index among the server's slices) whose
// gradient travels as `rows` rows, named by that many ids in the id array.
struct SparseEntry {
  std::uint32_t slice = 0;
  std::uint32_t reserved = 0;  // zero
  std::int64_t rows = 0;
};
inline constexpr std::size_t kSparseEntryBytes = 16;
static_assert(std::is_standard_layout_v<SparseEntry>);
static_assert(sizeof(SparseEntry) == kSparseEntryBytes);
static_assert(offsetof(SparseEntry, slice) == 0);
static_assert(offsetof(SparseEntry, rows) == 8);

// Longest text a body may carry (a checkpoint directory, a shard manifest, the stats).
inline constexpr std::size_t kMaxTextBytes = std::size_t{1} << 20;

// A decoded body. `ids` is an i64 tensor of every sparse entry's row ids, entry after
// entry (undefined when there are none); `text` is whatever follows.
struct Body {
  Header header;
  std::vector<SparseEntry> sparse;
  Tensor ids;
  std::string text;

  Type type() const { return static_cast<Type>(header.type); }
  float lr() const;
};

Body make_body(Type type);
void set_lr(Header& header, float lr);

// Appends the row ids of the sparse entries, in table order, after the table.
std::string encode(const Body& body);
// Throws InvalidArgument, naming the field, for a body that is not a well-formed PS body of
// this wire version: unknown type or flags, a nonzero reserved field, a sparse table or id
// array longer than the body, negative row counts, text longer than kMaxTextBytes.
// Checks sizes against the body only: a server checks them against its slices.
Body decode(std::string_view bytes);
// The fixed header alone, checked as decode() checks it; the rest of the body is not read.
// A server judges a request's sender by it before decoding the body.
Header decode_header(std::string_view bytes);

}  // namespace trib::ps::proto
