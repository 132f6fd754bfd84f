#include "trib/cluster/etcd_options.h"

#include "trib/core/error.h"

namespace trib::cluster {

EtcdOptions etcd_options(std::string_view url, const std::string& job) {
  TRIB_CHECK(!job.empty() && job.find('/') == std::string::npos, InvalidArgument,
             "etcd store: job name '{}' cannot be a key prefix: it must be non-empty and without '/'", job);
  EtcdOptions o;
  o.endpoints = parse_etcd_url(url);
  o.prefix = "/trib/" + job + "/";
  return o;
}

}  // namespace trib::cluster
