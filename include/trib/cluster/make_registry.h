// The registry `cluster.store` names: "" keeps membership in the coordinator's memory;
// "etcd://h1:2379,..." keeps it in that etcd cluster, under the job's own prefix.
#pragma once

#include <memory>
#include <string>

#include "trib/cluster/registry.h"

namespace trib::cluster {

// Throws InvalidArgument naming the store for a URL that is neither.
std::shared_ptr<Registry> make_registry(const std::string& store, const std::string& job_name);

}  // namespace trib::cluster
