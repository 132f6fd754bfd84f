#include "trib/data/data_position.h"

#include <charconv>

#include <fmt/format.h>

#include "trib/core/error.h"

namespace trib::data {
namespace {

constexpr std::string_view kMagic = "trib-data-position 1\n";
// Values longer than this are summarised in to_string(), not printed.
constexpr std::size_t kPrintableLength = 40;

template <typename T>
T parse_integer(std::string_view key, const std::string& text) {
  T value{};
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  TRIB_CHECK(ec == std::errc() && end == text.data() + text.size(), Corruption,
             "data position field '{}' should be an integer, got '{}'", key, text);
  return value;
}

bool printable(const std::string& value) {
  if (value.size() > kPrintableLength) return false;
  for (char c : value)
    if (c < 0x21 || c > 0x7e) return false;
  return true;
}

// Reads up to the next '\n' of `bytes` from `at`; throws Corruption if there is none.
std::string_view read_line(std::string_view bytes, std::size_t& at) {
  std::size_t end = bytes.find('\n', at);
  TRIB_CHECK(end != std::string_view::npos, Corruption,
             "data position is cut short at byte {}: expected a field header line", at);
  std::string_view line = bytes.substr(at, end - at);
  at = end + 1;
  return line;
}

}  // namespace

void DataPosition::set(std::string_view key, std::string value) {
  TRIB_CHECK(!key.empty() && key.find_first_of(" \n") == std::string_view::npos, InvalidArgument,
             "data position key '{}' must be non-empty without spaces or newlines", key);
  fields_.insert_or_assign(std::string(key), std::move(value));
}

void DataPosition::set_int(std::string_view key, std::int64_t value) { set(key, std::to_string(value)); }
void DataPosition::set_uint(std::string_view key, std::uint64_t value) { set(key, std::to_string(value)); }

const std::string& DataPosition::get(std::string_view key) const {
  auto it = fields_.find(key);
  TRIB_CHECK(it != fields_.end(), NotFound, "data position has no field '{}' (it has: {})", key,
             to_string());
  return it->second;
}

std::int64_t DataPosition::get_int(std::string_view key) const {
  return parse_integer<std::int64_t>(key, get(key));
}

std::uint64_t DataPosition::get_uint(std::string_view key) const {
  return parse_integer<std::uint64_t>(key, get(key));
}

// Layout: the magic line, then per field "<key> <value length>\n<value>\n".
std::string DataPosition::serialize() const {
  std::string out(kMagic);
  for (const auto& [key, value] : fields_) {
    out += fmt::format("{} {}\n", key, value.size());
    out += value;
    out += '\n';
  }
  return out;
}

DataPosition DataPosition::parse(std::string_view bytes) {
  TRIB_CHECK(bytes.starts_with(kMagic), Corruption,
             "data position does not start with '{}': not a serialized DataPosition, or another version",
             kMagic.substr(0, kMagic.size() - 1));
  DataPosition position;
  std::size_t at = kMagic.size();
  while (at < bytes.size()) {
    std::string_view header = read_line(bytes, at);
    std::size_t space = header.rfind(' ');
    TRIB_CHECK(space != std::string_view::npos && space > 0, Corruption,
               "data position field header '{}' is not '<key> <length>'", header);
    std::string_view key = header.substr(0, space);
    std::string_view length_text = header.substr(space + 1);
    std::size_t length = 0;
    auto [end, ec] = std::from_chars(length_text.data(), length_text.data() + length_text.size(), length);
    TRIB_CHECK(ec == std::errc() && end == length_text.data() + length_text.size(), Corruption,
               "data position field '{}' has a bad length '{}'", key, length_text);
    // Check the length against what is there before copying anything.
    TRIB_CHECK(length < bytes.size() - at && bytes[at + length] == '\n', Corruption,
               "data position field '{}' claims {} bytes but only {} remain", key, length,
               bytes.size() - at);
    position.set(key, std::string(bytes.substr(at, length)));
    at += length + 1;
  }
  return position;
}

std::string DataPosition::to_string() const {
  std::string out;
  for (const auto& [key, value] : fields_) {
    if (!out.empty()) out += ' ';
    if (printable(value)) out += fmt::format("{}={}", key, value);
    else out += fmt::format("{}=<{} bytes>", key, value.size());
  }
  return out;
}

}  // namespace trib::data
