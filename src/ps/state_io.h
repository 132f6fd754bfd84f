// The byte format of a parameter server's whole state as a primary copies it to a new backup
// (strategy.ps_replicas, src/ps/ps_server_state.cc): little-endian fields one after another,
// strings and vectors prefixed by their length. Both ends are processes of the same job (one
// build), so the layout is this file's, not a stable file format. A reader checks every length
// against what is left before it allocates, and throws InvalidArgument naming the field.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "trib/core/error.h"

namespace trib::ps::state_io {

class Writer {
 public:
  // Appends to `out` (a frame's fixed part, say), with room for `reserve` bytes in all: large
  // states are written once, without regrowing.
  explicit Writer(std::string out = {}, std::size_t reserve = 0) : out_(std::move(out)) { out_.reserve(reserve); }
  template <typename T>
  void put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    char b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out_.append(b, sizeof(T));
  }
  void put_bytes(const void* data, std::size_t n) {
    put<std::uint64_t>(n);
    out_.append(static_cast<const char*>(data), n);
  }
  void put_string(std::string_view s) { put_bytes(s.data(), s.size()); }
  template <typename T>
  void put_vector(const std::vector<T>& v) {
    put<std::uint64_t>(v.size());
    for (const T& x : v) put<T>(x);
  }
  void put_bools(const std::vector<bool>& v) {
    put<std::uint64_t>(v.size());
    for (bool x : v) put<std::uint8_t>(x ? 1 : 0);
  }
  void put_strings(const std::vector<std::string>& v) {
    put<std::uint64_t>(v.size());
    for (const std::string& s : v) put_string(s);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}
  template <typename T>
  T get(const char* field) {
    need(sizeof(T), field);
    T v;
    std::memcpy(&v, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  std::string_view get_bytes(const char* field) {
    const auto n = get<std::uint64_t>(field);
    need(n, field);
    std::string_view s = bytes_.substr(at_, n);
    at_ += n;
    return s;
  }
  std::string get_string(const char* field) { return std::string(get_bytes(field)); }
  template <typename T>
  std::vector<T> get_vector(const char* field, std::size_t expected) {
    check_count(get<std::uint64_t>(field), expected, field);
    std::vector<T> v(expected);
    for (T& x : v) x = get<T>(field);
    return v;
  }
  std::vector<bool> get_bools(const char* field, std::size_t expected) {
    check_count(get<std::uint64_t>(field), expected, field);
    std::vector<bool> v(expected);
    for (std::size_t i = 0; i < expected; ++i) v[i] = get<std::uint8_t>(field) != 0;
    return v;
  }
  std::vector<std::string> get_strings(const char* field, std::size_t expected) {
    check_count(get<std::uint64_t>(field), expected, field);
    std::vector<std::string> v(expected);
    for (std::string& s : v) s = get_string(field);
    return v;
  }
  // A count of items of at least `min_bytes` each: no more than the bytes left can hold.
  std::uint64_t get_count(const char* field, std::size_t min_bytes) {
    const auto n = get<std::uint64_t>(field);
    TRIB_CHECK(n <= (bytes_.size() - at_) / std::max<std::size_t>(min_bytes, 1), InvalidArgument,
               "server state: {} counts {} items, more than its {} bytes left hold", field, n, bytes_.size() - at_);
    return n;
  }
  bool at_end() const { return at_ == bytes_.size(); }

 private:
  void need(std::uint64_t n, const char* field) const {
    TRIB_CHECK(n <= bytes_.size() - at_, InvalidArgument, "server state: {} needs {} bytes, {} left", field, n,
               bytes_.size() - at_);
  }
  static void check_count(std::uint64_t n, std::size_t expected, const char* field) {
    TRIB_CHECK(n == expected, InvalidArgument, "server state: {} holds {} entries, expected {} (one per worker)",
               field, n, expected);
  }
  std::string_view bytes_;
  std::size_t at_ = 0;
};

}  // namespace trib::ps::state_io
