#include "trib/cluster/etcd_url.h"

#include <cctype>
#include <charconv>
#include <set>

#include "trib/core/error.h"

namespace trib::cluster {

namespace {

constexpr std::string_view kScheme = "etcd://";

EtcdEndpoint parse_entry(std::string_view url, std::string_view entry, std::size_t index) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument(fmt::format("etcd URL '{}': endpoint {} '{}' is not host:port: {}", url, index + 1,
                                       entry, why));
  };
  if (entry.empty()) throw bad("it is empty (a stray comma?)");
  auto colon = entry.rfind(':');
  if (colon == std::string_view::npos) throw bad("it has no ':PORT' (etcd's client port is usually 2379)");
  std::string_view host = entry.substr(0, colon);
  std::string_view port = entry.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    throw bad("write an IPv6 host in brackets, as in [::1]:2379");
  }
  if (host.empty()) throw bad("the host is missing");
  for (char ch : host)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '-' && ch != '_' && ch != ':')
      throw bad(fmt::format("'{}' is not a host name or address", host));
  EtcdEndpoint e;
  e.host = std::string(host);
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), e.port);
  if (port.empty() || ec != std::errc() || end != port.data() + port.size() || e.port < 1 || e.port > 65535)
    throw bad("the port must be a number from 1 to 65535");
  return e;
}

}  // namespace

std::string EtcdEndpoint::to_string() const {
  return host.find(':') != std::string::npos ? fmt::format("[{}]:{}", host, port) : fmt::format("{}:{}", host, port);
}

std::string EtcdEndpoint::base_url() const { return "http://" + to_string(); }

bool is_etcd_url(std::string_view store) { return store.starts_with(kScheme); }

std::vector<EtcdEndpoint> parse_etcd_url(std::string_view url) {
  TRIB_CHECK(is_etcd_url(url), InvalidArgument,
             "etcd URL '{}': expected etcd://host:port[,host:port...], as in etcd://h1:2379,h2:2379,h3:2379", url);
  std::string_view rest = url.substr(kScheme.size());
  TRIB_CHECK(rest.find_first_of("/?#@") == std::string_view::npos, InvalidArgument,
             "etcd URL '{}': expected only host:port entries after etcd://, without a path, query or user", url);
  std::vector<EtcdEndpoint> out;
  std::set<std::string> seen;
  for (std::size_t start = 0;;) {
    std::size_t comma = rest.find(',', start);
    std::string_view entry = rest.substr(start, comma == std::string_view::npos ? rest.npos : comma - start);
    EtcdEndpoint e = parse_entry(url, entry, out.size());
    std::string canonical = e.to_string();
    for (char& ch : canonical) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    TRIB_CHECK(seen.insert(canonical).second, InvalidArgument, "etcd URL '{}': endpoint '{}' is listed twice", url,
               entry);
    out.push_back(std::move(e));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

void validate_store_url(std::string_view store) {
  if (store.empty()) return;
  TRIB_CHECK(is_etcd_url(store), InvalidArgument,
             "store '{}' is not supported: expected \"\" (the coordinator's built-in store) or "
             "etcd://host:port[,host:port...]",
             store);
  parse_etcd_url(store);
}

}  // namespace trib::cluster
