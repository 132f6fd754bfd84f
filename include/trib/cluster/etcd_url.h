// `cluster.store: etcd://h1:2379,h2:2379,h3:2379`: where a job's rendezvous and membership
// live when they outlive any one machine. "" means the coordinator's built-in store.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace trib::cluster {

// One member of an etcd cluster, reached over its JSON gateway (plain HTTP).
struct EtcdEndpoint {
  std::string host;  // a name or address; an IPv6 address without its brackets
  int port = 0;
  std::string to_string() const;  // "h1:2379", "[::1]:2379"
  std::string base_url() const;   // "http://h1:2379"
};

// Parses "etcd://host:port[,host:port...]". Throws InvalidArgument naming the URL and the
// offending entry, with what was expected, on anything else (no scheme, an empty entry, a
// missing or out-of-range port, a repeated endpoint, a path or a query).
std::vector<EtcdEndpoint> parse_etcd_url(std::string_view url);

// True when `store` names an etcd cluster (starts with "etcd://"); "" and anything else
// not. Used to pick the store; parse_etcd_url says what is wrong with a bad one.
bool is_etcd_url(std::string_view store);

// Checks a `cluster.store` value: "" or a valid etcd URL. Throws InvalidArgument otherwise.
void validate_store_url(std::string_view store);

}  // namespace trib::cluster
