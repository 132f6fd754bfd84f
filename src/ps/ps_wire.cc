#include "ps/ps_wire.h"

#include <bit>
#include <cstring>
#include <limits>

#include "trib/core/error.h"

namespace trib::ps::proto {
namespace {

template <typename T>
void put(std::string& out, T value) {
  using U = std::make_unsigned_t<T>;
  const auto v = static_cast<std::uint64_t>(static_cast<U>(value));
  for (std::size_t i = 0; i < sizeof(T); ++i) out.push_back(static_cast<char>(v >> (8 * i) & 0xff));
}

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <typename T>
  T get(const char* field) {
    TRIB_CHECK(in_.size() >= sizeof(T), InvalidArgument, "PS body truncated at {}: {} bytes left, {} needed", field,
               in_.size(), sizeof(T));
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i)
      v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in_[i])) << (8 * i);
    in_.remove_prefix(sizeof(T));
    return static_cast<T>(static_cast<std::make_unsigned_t<T>>(v));
  }
  std::string_view take(std::size_t n) {
    std::string_view out = in_.substr(0, n);
    in_.remove_prefix(n);
    return out;
  }
  std::size_t left() const { return in_.size(); }

 private:
  std::string_view in_;
};

}  // namespace

std::string_view type_name(Type type) {
  switch (type) {
    case Type::init: return "init";
    case Type::restore: return "restore";
    case Type::pull: return "pull";
    case Type::push: return "push";
    case Type::save: return "save";
    case Type::stats: return "stats";
    case Type::done: return "done";
    case Type::claim: return "claim";
  }
  return "unknown";
}

float Body::lr() const { return std::bit_cast<float>(header.lr_bits); }

void set_lr(Header& header, float lr) { header.lr_bits = std::bit_cast<std::uint32_t>(lr); }

Body make_body(Type type) {
  Body b;
  b.header.type = static_cast<std::uint8_t>(type);
  return b;
}

std::string encode(const Body& b) {
  std::int64_t rows = 0;
  for (const SparseEntry& e : b.sparse) rows += e.rows;
  const std::int64_t ids = b.ids.defined() ? b.ids.numel() : 0;
  TRIB_CHECK(rows == ids, InvalidArgument, "PS {} body: the sparse table names {} rows but {} ids are attached",
             type_name(b.type()), rows, ids);
  TRIB_CHECK(ids == 0 || b.ids.dtype() == DType::i64, InvalidArgument, "PS row ids must be i64, got {}",
             b.ids.spec_string());
  std::string out;
  out.reserve(kHeaderBytes + kSparseEntryBytes * b.sparse.size() + 8 * static_cast<std::size_t>(ids) + b.text.size());
  const Header& h = b.header;
  put<std::uint8_t>(out, h.version);
  put<std::uint8_t>(out, h.type);
  put<std::uint16_t>(out, h.flags);
  put<std::int32_t>(out, h.worker);
  put<std::int64_t>(out, h.step);
  put<std::int64_t>(out, h.version_seen);
  put<std::uint32_t>(out, h.lr_bits);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(b.sparse.size()));
  put<std::uint32_t>(out, h.wait_ms);
  put<std::uint32_t>(out, h.seq);
  put<std::int64_t>(out, h.generation);
  for (const SparseEntry& e : b.sparse) {
    put<std::uint32_t>(out, e.slice);
    put<std::uint32_t>(out, 0);
    put<std::int64_t>(out, e.rows);
  }
  if (ids > 0) {
    const std::int64_t* p = b.ids.data<std::int64_t>();
    if constexpr (std::endian::native == std::endian::little) {
      out.append(reinterpret_cast<const char*>(p), static_cast<std::size_t>(ids) * 8);
    } else {
      for (std::int64_t k = 0; k < ids; ++k) put<std::int64_t>(out, p[k]);
    }
  }
  out += b.text;
  return out;
}

Header decode_header(std::string_view bytes) {
  Reader in(bytes);
  Header h;
  h.version = in.get<std::uint8_t>("version");
  TRIB_CHECK(h.version == kWireVersion, InvalidArgument, "PS body of wire version {}, expected {}", h.version,
             kWireVersion);
  h.type = in.get<std::uint8_t>("type");
  TRIB_CHECK(h.type >= 1 && h.type <= kMaxType, InvalidArgument, "unknown PS message type {}", h.type);
  const auto type = static_cast<Type>(h.type);
  h.flags = in.get<std::uint16_t>("flags");
  TRIB_CHECK((h.flags & ~kKnownFlags) == 0, InvalidArgument, "PS {} body: unknown flags 0x{:x}", type_name(type),
             h.flags);
  h.worker = in.get<std::int32_t>("worker");
  h.step = in.get<std::int64_t>("step");
  h.version_seen = in.get<std::int64_t>("version");
  h.lr_bits = in.get<std::uint32_t>("lr");
  h.sparse_slices = in.get<std::uint32_t>("sparse_slices");
  h.wait_ms = in.get<std::uint32_t>("wait_ms");
  h.seq = in.get<std::uint32_t>("seq");
  TRIB_CHECK(h.seq == 0 || type == Type::push || type == Type::claim, InvalidArgument,
             "PS {} body: reserved header field (seq) is {}, expected 0 (only a push or a claim carries a sequence "
             "number)",
             type_name(type), h.seq);
  h.generation = in.get<std::int64_t>("generation");
  return h;
}

Body decode(std::string_view bytes) {
  Body b;
  b.header = decode_header(bytes);  // throws unless the whole header is there
  const Header& h = b.header;
  Reader in(bytes.substr(kHeaderBytes));
  // The table's length is checked against the bytes present before anything is allocated.
  TRIB_CHECK(h.sparse_slices <= in.left() / kSparseEntryBytes, InvalidArgument,
             "PS {} body claims {} sparse slices but holds {} bytes after the header", type_name(b.type()),
             h.sparse_slices, in.left());
  b.sparse.resize(h.sparse_slices);
  // Each count is bounded by the whole body, so their sum cannot overflow; then the sum is
  // checked against the bytes that remain.
  std::uint64_t rows = 0;
  for (SparseEntry& e : b.sparse) {
    e.slice = in.get<std::uint32_t>("sparse slice");
    e.reserved = in.get<std::uint32_t>("sparse reserved");
    e.rows = in.get<std::int64_t>("sparse rows");
    TRIB_CHECK(e.reserved == 0, InvalidArgument, "PS {} body: reserved sparse field is {}, expected 0",
               type_name(b.type()), e.reserved);
    TRIB_CHECK(e.rows >= 0 && static_cast<std::uint64_t>(e.rows) <= bytes.size() / 8, InvalidArgument,
               "PS {} body: sparse slice {} claims {} rows in a body of {} bytes", type_name(b.type()), e.slice,
               e.rows, bytes.size());
    rows += static_cast<std::uint64_t>(e.rows);
  }
  TRIB_CHECK(rows <= in.left() / 8, InvalidArgument,
             "PS {} body: its sparse table names {} rows but {} bytes of ids follow", type_name(b.type()), rows,
             in.left());
  if (rows > 0) {
    b.ids = Tensor::empty(DType::i64, Shape{static_cast<std::int64_t>(rows)});
    std::string_view raw = in.take(rows * 8);
    std::int64_t* p = b.ids.data<std::int64_t>();
    if constexpr (std::endian::native == std::endian::little) {
      std::memcpy(p, raw.data(), raw.size());
    } else {
      Reader ids(raw);
      for (std::uint64_t k = 0; k < rows; ++k) p[k] = ids.get<std::int64_t>("id");
    }
  }
  TRIB_CHECK(in.left() <= kMaxTextBytes, InvalidArgument, "PS {} body: {} bytes of text, at most {} allowed",
             type_name(b.type()), in.left(), kMaxTextBytes);
  b.text = std::string(in.take(in.left()));
  return b;
}

}  // namespace trib::ps::proto
