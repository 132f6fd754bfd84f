#include "collectives/named_tensors.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <sstream>

#include "trib/collectives/allgather.h"
#include "trib/collectives/broadcast.h"

namespace trib::collectives {
namespace {

// One line per tensor: name, dtype, dims (comma-separated), separated by tabs.
std::string catalogue_of(const std::map<std::string, Tensor>& tensors) {
  std::string out;
  for (const auto& [name, t] : tensors) {
    TRIB_CHECK(name.find_first_of("\t\n") == std::string::npos, InvalidArgument,
               "tensor name '{}' cannot be broadcast: it contains a tab or newline", name);
    out += fmt::format("{}\t{}\t{}\n", name, dtype_name(t.dtype()), fmt::join(t.shape().dims(), ","));
  }
  return out;
}

std::map<std::string, Tensor> tensors_of(const std::string& catalogue) {
  std::map<std::string, Tensor> out;
  std::istringstream lines(catalogue);
  for (std::string line; std::getline(lines, line);) {
    auto a = line.find('\t'), b = line.rfind('\t');
    TRIB_CHECK(a != std::string::npos && b > a, Corruption, "malformed tensor catalogue line '{}'", line);
    std::vector<std::int64_t> dims;
    std::istringstream ds(line.substr(b + 1));
    for (std::string d; std::getline(ds, d, ',');) dims.push_back(std::stoll(d));
    out[line.substr(0, a)] = Tensor::empty(parse_dtype(line.substr(a + 1, b - a - 1)), Shape(dims));
  }
  return out;
}

}  // namespace

void broadcast_bytes(Group& group, std::string& data, int root) {
  Tensor length = Tensor::from_vector<std::int64_t>(Shape{1}, {static_cast<std::int64_t>(data.size())});
  broadcast(group, length, {.root = root});
  const auto bytes = static_cast<std::size_t>(*length.data<std::int64_t>());
  Tensor text = Tensor::zeros(DType::i32, Shape{static_cast<std::int64_t>((bytes + 3) / 4)});
  if (group.rank() == root) std::memcpy(text.raw_data(), data.data(), bytes);
  broadcast(group, text, {.root = root});
  if (group.rank() != root) data.assign(static_cast<const char*>(text.raw_data()), bytes);
}

void broadcast_strings(Group& group, std::vector<std::string>& strings, int root) {
  std::string lengths, joined;
  if (group.rank() == root)
    for (const std::string& s : strings) {
      lengths += fmt::format("{} ", s.size());
      joined += s;
    }
  broadcast_bytes(group, lengths, root);
  broadcast_bytes(group, joined, root);
  if (group.rank() == root) return;
  strings.clear();
  std::istringstream in(lengths);
  std::size_t at = 0;
  for (std::size_t n = 0; in >> n; at += n) {
    TRIB_CHECK(n <= joined.size() - at, Corruption, "broadcast strings: {} bytes announced past the {} sent", n,
               joined.size() - at);
    strings.push_back(joined.substr(at, n));
  }
  TRIB_CHECK(at == joined.size(), Corruption, "broadcast strings: {} bytes sent, {} announced", joined.size(), at);
}

std::vector<std::string> allgather_bytes(Group& group, const std::string& bytes, std::size_t max_bytes,
                                         std::size_t& slot) {
  TRIB_CHECK(bytes.size() <= max_bytes, InvalidArgument, "rank {}: {} bytes to allgather, more than the {} allowed",
             group.rank(), bytes.size(), max_bytes);
  for (;;) {
    // [length as int64][bytes, up to `slot`, zero-padded], in 4-byte words: one ring pass.
    slot = (slot + 3) / 4 * 4;
    Tensor mine = Tensor::zeros(DType::i32, Shape{static_cast<std::int64_t>(2 + slot / 4)});
    const auto length = static_cast<std::int64_t>(bytes.size());
    std::memcpy(mine.raw_data(), &length, sizeof length);
    std::memcpy(static_cast<char*>(mine.raw_data()) + sizeof length, bytes.data(), std::min(bytes.size(), slot));
    const Tensor all = allgather(group, mine);
    const auto* base = static_cast<const char*>(all.raw_data());
    std::vector<std::int64_t> lengths(static_cast<std::size_t>(group.size()));
    std::int64_t longest = 0;
    for (int r = 0; r < group.size(); ++r) {
      std::int64_t& n = lengths[static_cast<std::size_t>(r)];
      std::memcpy(&n, base + static_cast<std::size_t>(r) * mine.nbytes(), sizeof n);
      TRIB_CHECK(n >= 0 && static_cast<std::size_t>(n) <= max_bytes, InvalidArgument,
                 "rank {} announced {} bytes to allgather, more than the {} allowed", r, n, max_bytes);
      longest = std::max(longest, n);
    }
    if (static_cast<std::size_t>(longest) <= slot) {
      std::vector<std::string> out;
      for (int r = 0; r < group.size(); ++r)
        out.emplace_back(base + static_cast<std::size_t>(r) * mine.nbytes() + sizeof(std::int64_t),
                         static_cast<std::size_t>(lengths[static_cast<std::size_t>(r)]));
      return out;
    }
    // Someone's bytes did not fit: every rank saw the same lengths, and grows the slot alike.
    slot = std::bit_ceil(static_cast<std::size_t>(longest));
  }
}

void broadcast_named_tensors(Group& group, std::map<std::string, Tensor>& tensors, int root) {
  std::string catalogue = group.rank() == root ? catalogue_of(tensors) : std::string();
  broadcast_bytes(group, catalogue, root);
  if (group.rank() != root) tensors = tensors_of(catalogue);
  for (auto& [name, t] : tensors) broadcast(group, t, {.root = root});
}

}  // namespace trib::collectives
