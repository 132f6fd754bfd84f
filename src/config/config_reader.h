// Strict reading of one YAML mapping: every key the program asks for is recorded, and
// finish() rejects keys nobody asked for, suggesting the nearest known key. Errors name the
// file and the dotted key path.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "trib/core/error.h"

namespace trib::config {

class ConfigReader {
 public:
  ConfigReader(YAML::Node node, std::string file, std::string path = "");

  // Every key (dotted path) this reader and its children found set, non-null, in the file:
  // what lets a derived default tell "not given" from "given as the default's value".
  const std::set<std::string>& given() const { return *given_; }

  bool has(const std::string& key);
  template <typename T> T get(const std::string& key, const T& fallback);
  template <typename T> T required(const std::string& key);
  // A nested mapping (empty when absent).
  ConfigReader child(const std::string& key);
  // A list of mappings (empty when absent).
  std::vector<ConfigReader> list(const std::string& key);
  // A list of scalars.
  template <typename T> std::vector<T> get_list(const std::string& key, const std::vector<T>& fallback);
  // A mapping of scalars, as text (e.g. librdkafka properties, passed on as they are).
  std::map<std::string, std::string> get_text_map(const std::string& key);

  // Throws InvalidArgument for the first unknown key, with a suggestion.
  void finish() const;

  std::string where(const std::string& key) const;  // "model.layers[1].units"
  const std::string& file() const { return file_; }

  // Records in `keys` the path of every key this reader and its children ask for, present or
  // not, with list indices left out ("model.layers[].units"): the keys the parser knows,
  // which docs/config.md must list (tests/unit/config/config_doc_test.cc).
  void log_keys_to(std::set<std::string>* keys) { key_log_ = keys; }

 private:
  YAML::Node lookup(const std::string& key);
  template <typename T> T convert(const YAML::Node& n, const std::string& key) const;

  YAML::Node node_;
  std::string file_;
  std::string path_;
  std::set<std::string> known_;
  std::shared_ptr<std::set<std::string>> given_ = std::make_shared<std::set<std::string>>();
  std::set<std::string>* key_log_ = nullptr;
};

// Levenshtein distance, for "did you mean" suggestions.
std::size_t edit_distance(const std::string& a, const std::string& b);

// Applies "a.b.c=value" to the YAML tree (value parsed as YAML); numeric parts index lists.
void apply_override(YAML::Node& root, const std::string& assignment);

template <typename T>
T ConfigReader::convert(const YAML::Node& n, const std::string& key) const {
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    std::string what = n.IsScalar() ? "'" + n.Scalar() + "'" : (n.IsSequence() ? "a list" : "a mapping");
    const char* expected = std::is_same_v<T, bool> ? "true or false"
                           : std::is_integral_v<T> ? "an integer"
                           : std::is_floating_point_v<T> ? "a number"
                                                         : "text";
    throw InvalidArgument(fmt::format("config {}: {} must be {}, got {}", file_, where(key), expected, what));
  }
}

template <typename T>
T ConfigReader::get(const std::string& key, const T& fallback) {
  YAML::Node n = lookup(key);
  return n ? convert<T>(n, key) : fallback;
}

template <typename T>
T ConfigReader::required(const std::string& key) {
  YAML::Node n = lookup(key);
  TRIB_CHECK(n, InvalidArgument, "config {}: {} is required", file_, where(key));
  return convert<T>(n, key);
}

template <typename T>
std::vector<T> ConfigReader::get_list(const std::string& key, const std::vector<T>& fallback) {
  YAML::Node n = lookup(key);
  if (!n) return fallback;
  TRIB_CHECK(n.IsSequence(), InvalidArgument, "config {}: {} must be a list", file_, where(key));
  std::vector<T> out;
  for (std::size_t i = 0; i < n.size(); ++i) out.push_back(convert<T>(n[i], key));
  return out;
}

}  // namespace trib::config
