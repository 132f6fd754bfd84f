#include "app/version.h"

#include <librdkafka/rdkafka.h>
#include <oneapi/dnnl/dnnl.h>

#include <fmt/format.h>

#include "build_info.h"

namespace trib::app {

std::string version_text() {
  const dnnl_version_t* dnnl = dnnl_version();
  return fmt::format("trib {} (commit {})\noneDNN {}.{}.{} (commit {})\nlibrdkafka {}", TRIB_VERSION,
                     TRIB_GIT_DESCRIBE, dnnl->major, dnnl->minor, dnnl->patch, dnnl->hash, rd_kafka_version_str());
}

}  // namespace trib::app
