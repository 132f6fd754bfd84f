// "host:port", the one way an address is written anywhere in Tributary: the job file's
// cluster addresses, --join, --listen and --bind, every listener and connection, and the
// addresses roles publish to each other are parsed and printed by these two functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace trib::net {

struct HostPort {
  std::string host;  // a name, an IPv4 address, or an IPv6 address without brackets
  std::uint16_t port = 0;

  // "10.0.0.2:7001", "[::1]:7001": an IPv6 host gets its brackets back.
  std::string to_string() const;
  bool operator==(const HostPort&) const = default;
};

struct HostPortRules {
  // The text must name a host (else `default_host` fills in an empty one).
  bool host_required = false;
  // The port must be 1..65535 (an address given to others to dial, not one to bind).
  bool port_required = false;
  // Names the text in errors: "address", "config job.yaml: cluster.spec.ps[0]", "--join".
  std::string_view what = "address";
};

// "10.0.0.2:5000", "[::1]:5000", "name:5000", ":5000" (host = default_host) or "" (host =
// default_host, port 0). An IPv6 host must be in brackets. Throws InvalidArgument:
// "WHAT 'TEXT' is not host:port: WHY", one line.
HostPort parse_host_port(std::string_view text, std::string_view default_host = "",
                         const HostPortRules& rules = {});

// host and port as "host:port" ("[v6]:port"); the inverse of parse_host_port.
std::string format_host_port(std::string_view host, std::uint16_t port);

}  // namespace trib::net
