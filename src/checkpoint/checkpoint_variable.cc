// A variable read whole from a checkpoint that may hold it in row slices: parameter servers
// with a split placement (balanced, partitioned) write each server's rows of a variable as
// "<name>@<first row>" (docs/placement.md, "Checkpoints"), and a single process (eval, export,
// serve, a local or allreduce resume) needs the whole tensor.
#include <algorithm>
#include <cstring>
#include <map>

#include <fmt/format.h>

#include "trib/checkpoint/checkpoint.h"

namespace trib {

namespace {

// The first row in "<name>@<digits>", or -1 when `key` is not a slice of `name`.
std::int64_t slice_row(const std::string& key, std::string_view name) {
  if (key.size() <= name.size() + 1 || !key.starts_with(name) || key[name.size()] != '@') return -1;
  const std::string digits = key.substr(name.size() + 1);
  if (digits.size() > 18 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(digits);
}

}  // namespace

Tensor Checkpoint::variable(std::string_view name) const {
  if (contains(name)) return tensor(name).clone();
  std::map<std::int64_t, const Tensor*> slices;  // by first row
  for (const auto& [key, t] : tensors_)
    if (std::int64_t row = slice_row(key, name); row >= 0) slices.emplace(row, &t);
  TRIB_CHECK(!slices.empty(), NotFound, "checkpoint {} has no tensor '{}' that the model needs", dir_.string(), name);
  const Tensor& first = *slices.begin()->second;
  TRIB_CHECK(first.shape().rank() >= 1, Corruption, "checkpoint {}: slice '{}@0' of '{}' is a scalar", dir_.string(),
             name, name);
  std::vector<std::int64_t> dims = first.shape().dims();
  std::int64_t rows = 0;
  for (const auto& [row, t] : slices) {
    std::vector<std::int64_t> d = t->shape().dims();
    TRIB_CHECK(row == rows && t->dtype() == first.dtype() && d.size() == dims.size() &&
                   std::equal(d.begin() + 1, d.end(), dims.begin() + 1),
               Corruption, "checkpoint {}: the slices of '{}' do not tile it: '{}@{}' is {} where rows from {} of {} were expected",
               dir_.string(), name, name, row, t->spec_string(), rows, first.spec_string());
    rows += d[0];
  }
  dims[0] = rows;
  Tensor whole = Tensor::empty(first.dtype(), Shape(dims));
  std::size_t at = 0;
  for (const auto& [row, t] : slices) {
    std::memcpy(static_cast<char*>(whole.raw_data()) + at, t->raw_data(), t->nbytes());
    at += t->nbytes();
  }
  return whole;
}

}  // namespace trib
