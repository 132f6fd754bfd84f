// How EtcdStore and EtcdRegistry reach an etcd cluster: which members, under which key
// prefix, and how long they keep trying when members are down.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "trib/cluster/etcd_url.h"

namespace trib::cluster {

struct EtcdOptions {
  std::vector<EtcdEndpoint> endpoints;  // from parse_etcd_url; at least one
  // Every key of the job lives under this prefix, so that jobs share an etcd cluster.
  std::string prefix = "/trib/job/";
  // One operation, failover included: past it, Unavailable names every endpoint and its
  // last error. A 3-member cluster re-elects a leader in about one election timeout (1 s).
  std::chrono::milliseconds operation_timeout{10000};
  // One HTTP attempt at one member. A member cut off from the quorum, or left without a
  // leader, holds requests without answering, so the first round over the members gives
  // each first_attempt_timeout, and each later round twice the last, up to attempt_timeout:
  // a hung member is left quickly, and a slow but healthy cluster still gets the full time.
  std::chrono::milliseconds first_attempt_timeout{500};
  std::chrono::milliseconds attempt_timeout{2000};
  std::chrono::milliseconds connect_timeout{500};
  // A watch is reopened (after a fresh read) this often: a member that freezes under an open
  // watch sends nothing, not even an error, so this bounds how late its news can be.
  std::chrono::milliseconds watch_round{3000};
  // Backoff between rounds over all endpoints: doubles from min to max.
  std::chrono::milliseconds backoff_min{50};
  std::chrono::milliseconds backoff_max{1000};
  // Largest response (or one watch message) accepted; larger ones are refused as corrupt
  // before they are buffered whole.
  std::size_t max_response_bytes = std::size_t{64} << 20;
};

// The options for `cluster.store` URL `url` and job `job`: keys under /trib/<job>/.
// Throws InvalidArgument for a bad URL or a job name with '/'.
EtcdOptions etcd_options(std::string_view url, const std::string& job);

}  // namespace trib::cluster
