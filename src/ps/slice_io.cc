#include "ps/slice_io.h"

#include <cstring>
#include <set>

namespace trib::ps {

const VariableInfo& variable_info(const std::vector<VariableInfo>& vars, const std::string& name) {
  for (const VariableInfo& v : vars)
    if (v.name == name) return v;
  throw NotFound(fmt::format("no variable '{}' in the model", name));
}

Shape slice_shape_of(const VariableInfo& v, const Slice& s) {
  if (s.whole) return v.shape;
  std::vector<std::int64_t> d = v.shape.dims();
  d[0] = s.row_end - s.row_begin;
  return Shape(d);
}

void write_slices(const std::vector<VariableInfo>& vars, const std::vector<Slice>& slices, const Tensor& values,
                  SlotStore& slots, TensorMap& out) {
  std::int64_t offset = 0;
  for (const Slice& s : slices) {
    out[s.key()] = values.view(offset, slice_shape_of(variable_info(vars, s.variable), s)).clone();
    offset += s.elements;
  }
  for (const auto& [name, t] : slots.to_tensors()) out[name] = t.clone();
}

namespace {

// Pieces of `var` in the checkpoint under `prefix`: (first row, tensor).
std::vector<std::pair<std::int64_t, const Tensor*>> pieces(const Checkpoint& ckpt, const std::string& prefix,
                                                           const std::string& var, const std::string& suffix) {
  std::vector<std::pair<std::int64_t, const Tensor*>> out;
  for (const auto& [name, t] : ckpt.tensors()) {
    if (!name.starts_with(prefix + var) || !name.ends_with(suffix)) continue;
    std::string middle = name.substr(prefix.size() + var.size(), name.size() - prefix.size() - var.size() - suffix.size());
    if (middle.empty()) out.emplace_back(0, &t);
    else if (middle[0] == '@' && middle.find_first_not_of("0123456789", 1) == std::string::npos && middle.size() > 1)
      out.emplace_back(std::stoll(middle.substr(1)), &t);
  }
  return out;
}

// Copies rows [begin, end) of a variable from its pieces into dst; returns false when some
// row is not covered.
bool assemble(const std::vector<std::pair<std::int64_t, const Tensor*>>& parts, std::int64_t row_elements,
              std::int64_t begin, std::int64_t end, float* dst) {
  std::int64_t covered = 0;
  for (const auto& [first, t] : parts) {
    std::int64_t rows = row_elements == 0 ? 0 : t->numel() / row_elements;
    std::int64_t lo = std::max(begin, first), hi = std::min(end, first + rows);
    if (lo >= hi) continue;
    std::memcpy(dst + (lo - begin) * row_elements, t->data<float>() + (lo - first) * row_elements,
                static_cast<std::size_t>((hi - lo) * row_elements) * sizeof(float));
    covered += hi - lo;
  }
  return covered == end - begin;
}

}  // namespace

void read_slices(const Checkpoint& ckpt, const std::vector<VariableInfo>& vars, const std::vector<Slice>& slices,
                 Tensor& values, SlotStore& slots) {
  std::int64_t offset = 0;
  for (const Slice& s : slices) {
    const VariableInfo& v = variable_info(vars, s.variable);
    float* dst = values.data<float>() + offset;
    TRIB_CHECK(assemble(pieces(ckpt, "", s.variable, ""), v.row_elements(), s.row_begin, s.row_end, dst), NotFound,
               "checkpoint {} does not hold rows {}-{} of variable '{}'", ckpt.dir().string(), s.row_begin,
               s.row_end, s.variable);
    // Slots: every slot name the checkpoint has for this variable.
    std::set<std::string> slot_names;
    for (const auto& [name, t] : ckpt.tensors_with_prefix("slot/" + s.variable)) {
      std::string rest = name.substr(5 + s.variable.size());
      auto slash = rest.rfind('/');
      if (slash != std::string::npos && (rest.empty() || rest[0] == '/' || rest[0] == '@'))
        slot_names.insert(rest.substr(slash + 1));
    }
    for (const std::string& slot : slot_names) {
      auto parts = pieces(ckpt, "slot/", s.variable, "/" + slot);
      if (parts.empty() || parts[0].second->dtype() != DType::f32 || parts[0].second->shape().rank() == 0) {
        // Scalar slots (step counts) are per piece; take the first one found.
        if (!parts.empty()) slots.set(s.key(), slot, parts[0].second->clone());
        continue;
      }
      Tensor t = Tensor::empty(DType::f32, slice_shape_of(v, s));
      if (assemble(parts, v.row_elements(), s.row_begin, s.row_end, t.data<float>())) slots.set(s.key(), slot, t);
    }
    offset += s.elements;
  }
}

}  // namespace trib::ps
