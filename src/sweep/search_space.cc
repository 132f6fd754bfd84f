#include "trib/sweep/search_space.h"

#include <cctype>
#include <cmath>

#include <fmt/format.h>

#include "trib/core/error.h"

namespace trib::sweep {

namespace {

// splitmix64: a stateless mix, so that trial i's draw depends on (seed, i, dimension) only,
// and the same on every standard library (std:: distributions are not specified exactly).
std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double unit(std::uint64_t seed, std::int64_t index, std::size_t dim) {
  std::uint64_t h = mix(mix(mix(seed) ^ static_cast<std::uint64_t>(index)) ^ dim);
  return static_cast<double>(h >> 11) * 0x1.0p-53;  // [0, 1)
}

}  // namespace

bool SearchSpace::is_grid() const {
  for (const Dimension& d : dims_)
    if (d.kind != DimensionKind::choice) return false;
  return true;
}

std::int64_t SearchSpace::grid_size() const {
  TRIB_CHECK(is_grid(), InvalidArgument, "a grid needs every space key to be a choice list");
  std::int64_t n = 1;
  for (const Dimension& d : dims_) n *= static_cast<std::int64_t>(d.choices.size());
  return n;
}

Params SearchSpace::grid_point(std::int64_t index) const {
  TRIB_CHECK(index >= 0 && index < grid_size(), InvalidArgument, "grid point {} of {}", index, grid_size());
  Params p(dims_.size());
  for (std::size_t i = dims_.size(); i-- > 0;) {
    const auto n = static_cast<std::int64_t>(dims_[i].choices.size());
    p[i] = {dims_[i].key, dims_[i].choices[static_cast<std::size_t>(index % n)]};
    index /= n;
  }
  return p;
}

Params SearchSpace::sample(std::uint64_t seed, std::int64_t index) const {
  Params p;
  for (std::size_t i = 0; i < dims_.size(); ++i) {
    const Dimension& d = dims_[i];
    const double u = unit(seed, index, i);
    switch (d.kind) {
      case DimensionKind::choice: {
        auto k = static_cast<std::size_t>(u * static_cast<double>(d.choices.size()));
        p.emplace_back(d.key, d.choices[std::min(k, d.choices.size() - 1)]);
        break;
      }
      case DimensionKind::uniform:
        p.emplace_back(d.key, d.low + u * (d.high - d.low));
        break;
      case DimensionKind::log_uniform:
        p.emplace_back(d.key, std::exp(std::log(d.low) + u * (std::log(d.high) - std::log(d.low))));
        break;
      case DimensionKind::integer: {
        const auto lo = static_cast<std::int64_t>(d.low), hi = static_cast<std::int64_t>(d.high);
        auto v = lo + static_cast<std::int64_t>(u * static_cast<double>(hi - lo + 1));
        p.emplace_back(d.key, std::min(v, hi));
        break;
      }
    }
  }
  return p;
}

std::string to_yaml(const ParamValue& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return fmt::format("{}", *i);
  if (const auto* d = std::get_if<double>(&v)) {
    std::string s = fmt::format("{}", *d);  // shortest text that reads back as the same double
    // "1e-05" is a string to YAML 1.1 readers; "1.0e-05" is a number to all of them.
    if (auto e = s.find('e'); e != std::string::npos && s.find('.') == std::string::npos) s.insert(e, ".0");
    return s;
  }
  return std::get<std::string>(v);
}

std::string describe(const Params& p) {
  std::string out;
  for (const auto& [key, v] : p) {
    if (!out.empty()) out += ' ';
    std::string name = key.substr(key.rfind('.') + 1);
    // "model.layers.1.units" -> "units1": the index tells two layers' keys apart.
    if (std::size_t dot = key.rfind('.'); dot != std::string::npos && dot > 0) {
      std::size_t prev = key.rfind('.', dot - 1);
      std::string part = key.substr(prev == std::string::npos ? 0 : prev + 1, dot - (prev == std::string::npos ? 0 : prev + 1));
      if (!part.empty() && std::isdigit(static_cast<unsigned char>(part[0]))) name += part;
    }
    std::string value = std::holds_alternative<double>(v) ? fmt::format("{:.4g}", std::get<double>(v)) : to_yaml(v);
    out += name + "=" + value;
  }
  return out;
}

}  // namespace trib::sweep
