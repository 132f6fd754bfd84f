// security.encryption and the redaction of credentials from the run directory's config.yaml.
#include <gtest/gtest.h>

#include "trib/config/job_config.h"

namespace trib::config {
namespace {

const char* kJob = R"(
name: t
model:
  input: [4]
  classes: 2
  layers:
    - {type: dense, units: 2}
data:
  format: idx
  train: {images: a, labels: b}
  test: {images: c, labels: d}
training: {epochs: 1, batch: 4}
)";

TEST(SecurityConfig, EncryptionIsOnUnlessTurnedOff) {
  EXPECT_TRUE(parse_job_config(kJob, "job.yaml").security.encryption);
  EXPECT_FALSE(parse_job_config(std::string(kJob) + "security: {encryption: false}\n", "job.yaml").security.encryption);
  try {
    parse_job_config(std::string(kJob) + "security: {encrypt: false}\n", "job.yaml");
    FAIL() << "an unknown security key was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("security.encrypt"), std::string::npos) << e.what();
  }
}

TEST(SecurityConfig, CredentialsAreRedactedFromTheRunDirectoryCopyOnly) {
  std::string yaml = R"(name: t
data:
  format: kafka
  kafka:
    bootstrap_servers: "broker:9093"
    properties:
      security.protocol: SASL_SSL
      sasl.mechanisms: PLAIN
      sasl.username: trainer
      sasl.password: hunter2
      ssl.key.password: k3y
      sasl.oauthbearer.client.secret: s3cret
)";
  std::string redacted = redact_secrets(yaml);
  for (const char* secret : {"hunter2", "k3y", "s3cret"}) {
    EXPECT_EQ(redacted.find(secret), std::string::npos) << secret << " in:\n" << redacted;
  }
  for (const char* kept : {"sasl.username: trainer", "security.protocol: SASL_SSL", "broker:9093"}) {
    EXPECT_NE(redacted.find(kept), std::string::npos) << kept << " missing from:\n" << redacted;
  }
  EXPECT_NE(redacted.find("sasl.password: <redacted>"), std::string::npos) << redacted;
  // Nothing to redact: the text is left exactly as it was.
  EXPECT_EQ(redact_secrets(kJob), kJob);
}

}  // namespace
}  // namespace trib::config
