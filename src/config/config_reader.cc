#include "config/config_reader.h"

#include <algorithm>
#include <numeric>

namespace trib::config {

ConfigReader::ConfigReader(YAML::Node node, std::string file, std::string path)
    : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)) {
  TRIB_CHECK(!node_ || node_.IsMap() || node_.IsNull(), InvalidArgument,
             "config {}: {} must be a mapping of keys to values", file_, path_.empty() ? "the file" : path_);
}

std::string ConfigReader::where(const std::string& key) const {
  return path_.empty() ? key : path_ + "." + key;
}

YAML::Node ConfigReader::lookup(const std::string& key) {
  known_.insert(key);
  if (key_log_ != nullptr) {
    std::string path = where(key);
    for (std::size_t open = path.find('['); open != std::string::npos; open = path.find('[', open + 1))
      path.erase(open + 1, path.find(']', open) - open - 1);
    key_log_->insert(std::move(path));
  }
  if (!node_ || !node_.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
  YAML::Node n = node_[key];
  if (n && n.IsNull()) return YAML::Node(YAML::NodeType::Undefined);
  if (n) given_->insert(where(key));
  return n;
}

bool ConfigReader::has(const std::string& key) { return static_cast<bool>(lookup(key)); }

ConfigReader ConfigReader::child(const std::string& key) {
  YAML::Node n = lookup(key);
  TRIB_CHECK(!n || n.IsMap(), InvalidArgument, "config {}: {} must be a mapping", file_, where(key));
  ConfigReader c(n ? n : YAML::Node(YAML::NodeType::Map), file_, where(key));
  c.given_ = given_;
  c.key_log_ = key_log_;
  return c;
}

std::map<std::string, std::string> ConfigReader::get_text_map(const std::string& key) {
  YAML::Node n = lookup(key);
  std::map<std::string, std::string> out;
  if (!n) return out;
  TRIB_CHECK(n.IsMap(), InvalidArgument, "config {}: {} must be a mapping", file_, where(key));
  for (const auto& kv : n) {
    std::string name = kv.first.as<std::string>();
    TRIB_CHECK(kv.second.IsScalar(), InvalidArgument, "config {}: {}.{} must be a single value", file_, where(key),
               name);
    out[name] = kv.second.Scalar();
  }
  return out;
}

std::vector<ConfigReader> ConfigReader::list(const std::string& key) {
  YAML::Node n = lookup(key);
  std::vector<ConfigReader> out;
  if (!n) return out;
  TRIB_CHECK(n.IsSequence(), InvalidArgument, "config {}: {} must be a list", file_, where(key));
  for (std::size_t i = 0; i < n.size(); ++i) {
    out.emplace_back(n[i], file_, fmt::format("{}[{}]", where(key), i));
    out.back().given_ = given_;
    out.back().key_log_ = key_log_;
  }
  return out;
}

void ConfigReader::finish() const {
  if (!node_ || !node_.IsMap()) return;
  for (const auto& kv : node_) {
    std::string key = kv.first.as<std::string>();
    if (known_.count(key)) continue;
    std::string best;
    std::size_t best_d = SIZE_MAX;
    for (const std::string& k : known_) {
      std::size_t d = edit_distance(key, k);
      if (d < best_d) best_d = d, best = k;
    }
    std::string hint = (!best.empty() && best_d <= std::max<std::size_t>(2, key.size() / 3))
                           ? fmt::format("; did you mean '{}'?", where(best))
                           : fmt::format("; valid keys here: {}", fmt::join(known_, ", "));
    throw InvalidArgument(fmt::format("config {}: unknown key '{}'{}", file_, where(key), hint));
  }
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  std::iota(prev.begin(), prev.end(), 0);
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a[i - 1] != b[j - 1])});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

void apply_override(YAML::Node& root, const std::string& assignment) {
  auto eq = assignment.find('=');
  TRIB_CHECK(eq != std::string::npos && eq > 0, InvalidArgument,
             "--set '{}': expected key.path=value", assignment);
  std::string path = assignment.substr(0, eq), text = assignment.substr(eq + 1);
  YAML::Node value;
  try {
    value = YAML::Load(text);
  } catch (const YAML::Exception&) {
    value = YAML::Node(text);
  }
  std::vector<std::string> parts;
  for (std::size_t b = 0, e; b <= path.size(); b = e + 1) {
    e = path.find('.', b);
    if (e == std::string::npos) e = path.size();
    TRIB_CHECK(e > b, InvalidArgument, "--set '{}': empty part in key path", assignment);
    parts.push_back(path.substr(b, e - b));
  }
  // yaml-cpp nodes are handles: walking with a copy and assigning through it edits the tree.
  std::vector<YAML::Node> chain{root};
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node cur = chain.back();
    const std::string& p = parts[i];
    bool index = !p.empty() && std::all_of(p.begin(), p.end(), ::isdigit);
    if (index) {
      TRIB_CHECK(cur.IsSequence() && std::stoul(p) < cur.size(), InvalidArgument,
                 "--set '{}': '{}' is not a valid list index there", assignment, p);
      chain.push_back(cur[std::stoul(p)]);
    } else {
      chain.push_back(cur[p]);
    }
  }
  YAML::Node parent = chain.back();
  const std::string& last = parts.back();
  if (!last.empty() && std::all_of(last.begin(), last.end(), ::isdigit) && parent.IsSequence()) {
    TRIB_CHECK(std::stoul(last) < parent.size(), InvalidArgument,
               "--set '{}': index {} is past the end of the list", assignment, last);
    parent[std::stoul(last)] = value;
  } else {
    parent[last] = value;
  }
}

}  // namespace trib::config
