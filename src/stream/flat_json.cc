#include "stream/flat_json.h"

#include <charconv>

namespace trib::stream::detail {
namespace {

class Scanner {
 public:
  explicit Scanner(std::string_view s) : p_(s.data()), end_(s.data() + s.size()) {}

  void skip_space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }
  bool eat(char c) {
    skip_space();
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }
  bool at_end() {
    skip_space();
    return p_ == end_;
  }
  char peek() {
    skip_space();
    return p_ == end_ ? '\0' : *p_;
  }
  // A string without escapes or control characters (else: decline).
  bool string(std::string_view& out) {
    if (!eat('"')) return false;
    const char* start = p_;
    while (p_ < end_ && *p_ != '"') {
      if (*p_ == '\\' || static_cast<unsigned char>(*p_) < 0x20) return false;
      ++p_;
    }
    if (p_ == end_) return false;
    out = std::string_view(start, static_cast<std::size_t>(p_ - start));
    ++p_;
    return true;
  }
  // JSON's number grammar exactly (from_chars alone would also take "inf", "1." or "01").
  bool number(double& out) {
    skip_space();
    const char* start = p_;
    if (p_ < end_ && *p_ == '-') ++p_;
    if (p_ < end_ && *p_ == '0') {
      ++p_;
    } else if (!digits()) {
      return false;
    }
    if (p_ < end_ && *p_ == '.') {
      ++p_;
      if (!digits()) return false;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (!digits()) return false;
    }
    auto [ptr, ec] = std::from_chars(start, p_, out);
    return ec == std::errc() && ptr == p_;
  }
  bool literal(std::string_view word) {
    skip_space();
    if (static_cast<std::size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word) return false;
    p_ += word.size();
    return true;
  }

 private:
  bool digits() {
    const char* start = p_;
    while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    return p_ > start;
  }
  const char* p_;
  const char* end_;
};

}  // namespace

bool scan_flat_object(std::string_view bytes, const SlotMap& slots, std::vector<double>& values,
                      std::vector<bool>& seen) {
  Scanner s(bytes);
  if (!s.eat('{')) return false;
  if (s.eat('}')) return s.at_end();
  do {
    std::string_view key;
    if (!s.string(key) || !s.eat(':')) return false;
    auto it = slots.find(key);
    const int slot = it == slots.end() ? -1 : it->second;
    double value = 0;
    const char c = s.peek();
    if (c == '"') {
      std::string_view ignored;
      if (slot >= 0 || !s.string(ignored)) return false;  // a string where a number belongs: the reference words it
      continue;
    }
    if (c == 't' || c == 'f') {
      if (!s.literal(c == 't' ? "true" : "false")) return false;
      value = c == 't' ? 1.0 : 0.0;
    } else if (!s.number(value)) {
      return false;  // null, nesting or a syntax error
    }
    if (slot >= 0) {
      values[slot] = value;
      seen[slot] = true;
    }
  } while (s.eat(','));
  return s.eat('}') && s.at_end();
}

}  // namespace trib::stream::detail
