#include "collectives/wire.h"

#include <cstring>
#include <vector>

#include "trib/core/error.h"

namespace trib::collectives::detail {
namespace {

constexpr std::size_t kFixedBytes = 1 + 1 + 1 + 1 + 1 + 4 + 8 + 8 + 4 + 4 + 4;

template <typename T>
void put(std::string& out, T value) {
  for (std::size_t i = 0; i < sizeof(T); ++i) {
    out.push_back(static_cast<char>(static_cast<std::uint64_t>(value) >> (8 * i) & 0xff));
  }
}

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <typename T>
  T get() {
    TRIB_CHECK(in_.size() >= sizeof(T), InvalidArgument, "collective request truncated");
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i) {
      v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in_[i])) << (8 * i);
    }
    in_.remove_prefix(sizeof(T));
    return static_cast<T>(v);
  }
  std::string_view rest() const { return in_; }

 private:
  std::string_view in_;
};

}  // namespace

std::string_view family_name(Family family) {
  switch (family) {
    case Family::hello: return "hello";
    case Family::abort: return "abort";
    case Family::allreduce: return "allreduce";
    case Family::broadcast: return "broadcast";
    case Family::allgather: return "allgather";
    case Family::barrier: return "barrier";
    case Family::leave: return "leave";
  }
  return "unknown";
}

std::string_view algorithm_name(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::none: return "none";
    case Algorithm::ring: return "ring";
    case Algorithm::direct: return "direct";
    case Algorithm::chain: return "chain";
    case Algorithm::sizes: return "sizes";
    case Algorithm::dissemination: return "dissemination";
  }
  return "unknown";
}

std::uint64_t max_request_bytes() {
  constexpr std::uint64_t kEmptyTensorDescriptor = 64;  // generous: an absent tensor's descriptor
  return kFixedBytes + 8 * static_cast<std::uint64_t>(Shape::kMaxRank) + kMaxTextBytes + kEmptyTensorDescriptor;
}

std::string encode(const Request& r) {
  std::string out;
  out.reserve(kFixedBytes + 8 * static_cast<std::size_t>(r.shape.rank()) + r.text.size());
  put<std::uint8_t>(out, kWireVersion);
  put<std::uint8_t>(out, static_cast<std::uint8_t>(r.family));
  put<std::uint8_t>(out, static_cast<std::uint8_t>(r.algorithm));
  put<std::uint8_t>(out, static_cast<std::uint8_t>(r.dtype));
  put<std::uint8_t>(out, static_cast<std::uint8_t>(r.shape.rank()));
  put<std::uint32_t>(out, static_cast<std::uint32_t>(r.from));
  put<std::uint64_t>(out, r.generation);
  put<std::uint64_t>(out, r.op);
  put<std::uint32_t>(out, r.step);
  put<std::uint32_t>(out, r.segment);
  put<std::uint32_t>(out, r.param);
  for (std::int64_t d : r.shape.dims()) put<std::uint64_t>(out, static_cast<std::uint64_t>(d));
  out += std::string_view(r.text).substr(0, kMaxTextBytes);
  return out;
}

Request decode(std::string_view body) {
  Reader in(body);
  Request r;
  auto version = in.get<std::uint8_t>();
  TRIB_CHECK(version == kWireVersion, InvalidArgument,
             "collective request of wire version {}, expected {}", version, kWireVersion);
  auto family = in.get<std::uint8_t>();
  TRIB_CHECK(family >= 1 && family <= 7, InvalidArgument, "unknown collective family {}", family);
  r.family = static_cast<Family>(family);
  auto algorithm = in.get<std::uint8_t>();
  TRIB_CHECK(algorithm <= 5, InvalidArgument, "unknown collective algorithm {}", algorithm);
  r.algorithm = static_cast<Algorithm>(algorithm);
  auto dtype = in.get<std::uint8_t>();
  TRIB_CHECK(is_valid_dtype(dtype), InvalidArgument, "unknown dtype {} in a collective request", dtype);
  r.dtype = static_cast<DType>(dtype);
  auto rank = in.get<std::uint8_t>();
  TRIB_CHECK(rank <= Shape::kMaxRank, InvalidArgument, "collective request claims {} dimensions", rank);
  r.from = static_cast<std::int32_t>(in.get<std::uint32_t>());
  r.generation = in.get<std::uint64_t>();
  r.op = in.get<std::uint64_t>();
  r.step = in.get<std::uint32_t>();
  r.segment = in.get<std::uint32_t>();
  r.param = in.get<std::uint32_t>();
  std::vector<std::int64_t> dims(rank);
  for (auto& d : dims) {
    d = static_cast<std::int64_t>(in.get<std::uint64_t>());
    TRIB_CHECK(d >= 0, InvalidArgument, "negative dimension in a collective request");
  }
  r.shape = Shape(std::move(dims));  // checks the element count for overflow
  TRIB_CHECK(in.rest().size() <= kMaxTextBytes, InvalidArgument,
             "collective request carries {} bytes of text, at most {} expected", in.rest().size(), kMaxTextBytes);
  r.text = std::string(in.rest());
  return r;
}

}  // namespace trib::collectives::detail
