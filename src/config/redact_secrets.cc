// The run directory's config.yaml without credentials: a run directory is shared (copied to
// a colleague, attached to a bug report) far more freely than the job's secrets should be.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include "trib/config/job_config.h"

namespace trib::config {
namespace {

// librdkafka's credential settings: sasl.password, ssl.key.password, ssl.keystore.password,
// sasl.oauthbearer.client.secret, sasl.jaas.config, ssl.key.pem, sasl.oauthbearer.token...
bool names_a_credential(std::string key) {
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
  constexpr std::array<const char*, 7> kMarks{"password", "secret", "token", "jaas", "ssl.key",
                                              "credential", "private"};
  return std::any_of(kMarks.begin(), kMarks.end(),
                     [&](const char* mark) { return key.find(mark) != std::string::npos; });
}

}  // namespace

std::string redact_secrets(const std::string& resolved_yaml) {
  YAML::Node root = YAML::Load(resolved_yaml);
  YAML::Node properties = root["data"]["kafka"]["properties"];
  if (!properties || !properties.IsMap()) return resolved_yaml;
  bool changed = false;
  for (auto entry : properties) {
    if (names_a_credential(entry.first.as<std::string>())) {
      entry.second = "<redacted>";
      changed = true;
    }
  }
  if (!changed) return resolved_yaml;
  YAML::Emitter out;
  out << root;
  return std::string(out.c_str()) + "\n";
}

}  // namespace trib::config
