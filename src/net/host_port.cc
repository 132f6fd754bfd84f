#include "trib/net/host_port.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>

#include "trib/core/error.h"

namespace trib::net {
namespace {

bool host_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' ||
         c == ':' || c == '%';  // ':' inside brackets only; '%' for an IPv6 zone (fe80::1%eth0)
}

}  // namespace

std::string format_host_port(std::string_view host, std::uint16_t port) {
  if (host.find(':') != std::string_view::npos) return fmt::format("[{}]:{}", host, port);
  return fmt::format("{}:{}", host, port);
}

std::string HostPort::to_string() const { return format_host_port(host, port); }

HostPort parse_host_port(std::string_view text, std::string_view default_host,
                         const HostPortRules& rules) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument(fmt::format("{} '{}' is not host:port: {}", rules.what, text, why));
  };
  HostPort out{std::string(default_host), 0};
  if (text.empty() && !rules.host_required && !rules.port_required) return out;
  auto colon = text.rfind(':');
  if (colon == std::string_view::npos) throw bad("it has no ':PORT'");
  std::string_view host = text.substr(0, colon);
  std::string_view port = text.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
    if (host.empty()) throw bad("the brackets hold no IPv6 address");
  } else if (host.find(':') != std::string_view::npos) {
    throw bad("write an IPv6 host in brackets, as in [::1]:7000");
  }
  if (host.empty() && rules.host_required) throw bad("the host is missing");
  for (char c : host) {
    if (!host_char(c)) throw bad(fmt::format("'{}' is not a host name or address", host));
  }
  if (!host.empty()) out.host = std::string(host);
  unsigned value = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  const unsigned lowest = rules.port_required ? 1 : 0;
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || value < lowest ||
      value > 65535) {
    throw bad(fmt::format("the port must be a number from {} to 65535", lowest));
  }
  out.port = static_cast<std::uint16_t>(value);
  return out;
}

}  // namespace trib::net
