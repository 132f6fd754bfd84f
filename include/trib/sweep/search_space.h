// A sweep's search space: each dimension names a job key (as `--set` does: "optimizer.lr",
// "model.layers.1.units") and how its values are drawn: a choice list, uniform, log-uniform
// or an integer range. Draws are seeded per trial, so trial i's parameters depend only on
// (seed, i): a resumed sweep draws the same ones.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace trib::sweep {

using ParamValue = std::variant<std::int64_t, double, std::string>;

enum class DimensionKind { choice, uniform, log_uniform, integer };

struct Dimension {
  std::string key;  // the job key the value is set at
  DimensionKind kind = DimensionKind::choice;
  std::vector<ParamValue> choices;  // choice
  double low = 0, high = 0;         // uniform, log_uniform, integer (both ends included for integer)
};

// One trial's values, in the space's order.
using Params = std::vector<std::pair<std::string, ParamValue>>;

class SearchSpace {
 public:
  SearchSpace() = default;
  explicit SearchSpace(std::vector<Dimension> dims) : dims_(std::move(dims)) {}

  const std::vector<Dimension>& dimensions() const { return dims_; }
  // Every dimension is a choice list: a grid can enumerate it.
  bool is_grid() const;
  // The number of grid points (the product of the choice lists' lengths).
  std::int64_t grid_size() const;
  // Grid point `index` (0 <= index < grid_size()); the last dimension varies fastest.
  Params grid_point(std::int64_t index) const;
  // Trial `index`'s random draw under `seed`.
  Params sample(std::uint64_t seed, std::int64_t index) const;

 private:
  std::vector<Dimension> dims_;
};

// "0.001", "128", "relu": the value as a YAML scalar, for `--set key=value`.
std::string to_yaml(const ParamValue& v);
// "lr=0.001 batch=64": short names (the key's last part) for tables and logs.
std::string describe(const Params& p);

}  // namespace trib::sweep
