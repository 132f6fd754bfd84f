#include "trib/cluster/make_registry.h"

#include "trib/cluster/etcd_registry.h"
#include "trib/cluster/memory_registry.h"
#include "trib/core/error.h"

namespace trib::cluster {

std::shared_ptr<Registry> make_registry(const std::string& store, const std::string& job_name) {
  if (store.empty()) return std::make_shared<MemoryRegistry>();
  TRIB_CHECK(is_etcd_url(store), InvalidArgument, "cluster.store '{}': expected \"\" or etcd://HOST:PORT,...", store);
  return std::make_shared<EtcdRegistry>(etcd_options(store, job_name.empty() ? "job" : job_name));
}

}  // namespace trib::cluster
