// Reading another process's metrics: an HTTP GET (cpp-httplib's client) and a parser of the
// Prometheus text format as MetricsRegistry writes it. The launcher's dashboard and
// `trib status` gather a job's roles this way.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "trib/monitor/metrics_registry.h"

namespace trib::monitor {

struct Sample {
  std::string name;  // with its _bucket/_sum/_count suffix for histograms
  Labels labels;
  double value = 0;
  // The value of label `key`, or "" when it has none.
  std::string label(const std::string& key) const;
};

// The samples of a text exposition; comments and blank lines skipped. A line that is not a
// sample throws InvalidArgument naming its number.
std::vector<Sample> parse_text_format(const std::string& text);

// GET http://host:port/path with an optional bearer token. nullopt when it cannot connect or
// answers anything but 200 (`error`, when given, says which).
std::optional<std::string> http_get(const std::string& host, int port, const std::string& path,
                                    const std::string& token, std::chrono::milliseconds timeout,
                                    std::string* error = nullptr);

}  // namespace trib::monitor
