#include "trib/monitor/scrape.h"

#include <cstdlib>
#include <sstream>

#include <httplib.h>

#include "trib/core/error.h"

namespace trib::monitor {

std::string Sample::label(const std::string& key) const {
  for (const auto& [k, v] : labels)
    if (k == key) return v;
  return "";
}

namespace {

double parse_number(const std::string& s, std::size_t line) {
  if (s == "+Inf" || s == "Inf") return HUGE_VAL;
  if (s == "-Inf") return -HUGE_VAL;
  if (s == "NaN") return NAN;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  TRIB_CHECK(end != s.c_str() && *end == '\0', InvalidArgument, "metrics line {}: '{}' is not a number", line, s);
  return v;
}

}  // namespace

std::vector<Sample> parse_text_format(const std::string& text) {
  std::vector<Sample> out;
  std::istringstream in(text);
  std::string line;
  std::size_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    std::size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = line.substr(0, i);
    TRIB_CHECK(!s.name.empty(), InvalidArgument, "metrics line {}: no metric name", number);
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        const std::size_t eq = line.find('=', i);
        TRIB_CHECK(eq != std::string::npos && eq + 1 < line.size() && line[eq + 1] == '"', InvalidArgument,
                   "metrics line {}: a label without =\"value\"", number);
        std::string key = line.substr(i, eq - i), value;
        std::size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\' && j + 1 < line.size()) {
            ++j;
            value += line[j] == 'n' ? '\n' : line[j];
          } else {
            value += line[j];
          }
        }
        TRIB_CHECK(j < line.size(), InvalidArgument, "metrics line {}: an unterminated label value", number);
        s.labels.emplace_back(std::move(key), std::move(value));
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      TRIB_CHECK(i < line.size(), InvalidArgument, "metrics line {}: labels not closed", number);
      ++i;
    }
    while (i < line.size() && line[i] == ' ') ++i;
    std::string value = line.substr(i);
    if (std::size_t space = value.find(' '); space != std::string::npos) value.resize(space);  // a timestamp
    s.value = parse_number(value, number);
    out.push_back(std::move(s));
  }
  return out;
}

std::optional<std::string> http_get(const std::string& host, int port, const std::string& path,
                                    const std::string& token, std::chrono::milliseconds timeout, std::string* error) {
  httplib::Client client(host, port);
  client.set_connection_timeout(timeout);
  client.set_read_timeout(timeout);
  httplib::Headers headers;
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  httplib::Result res = client.Get(path, headers);
  if (!res) {
    if (error) *error = fmt::format("{}:{}: {}", host, port, httplib::to_string(res.error()));
    return std::nullopt;
  }
  if (res->status != 200) {
    if (error) *error = fmt::format("{}:{}{}: HTTP {}", host, port, path, res->status);
    return std::nullopt;
  }
  return res->body;
}

}  // namespace trib::monitor
