#include "arrays.h"

#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "trib/core/error.h"

namespace trib::python {

namespace {

std::string shape_text(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t i = 0; i < a.ndim(); ++i) s += fmt::format("{}{}", i ? ", " : "", a.shape(i));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

std::string type_name(const py::handle& obj) { return py::str(py::type::handle_of(obj).attr("__name__")); }

// The object as a numpy array, without converting its dtype; TypeError for anything else.
py::array as_array(const py::handle& obj, const std::string& what, const char* wanted) {
  if (!py::isinstance<py::array>(obj))
    throw py::type_error(fmt::format("{} must be a numpy array of {}, got {}", what, wanted, type_name(obj)));
  return py::reinterpret_borrow<py::array>(obj);
}

// A C-contiguous float32 array (copied only when the input is strided); TypeError naming
// the dtype otherwise: numbers are never converted silently.
py::array_t<float, py::array::c_style> as_float32(const py::handle& obj, const std::string& what) {
  py::array a = as_array(obj, what, "float32");
  if (!a.dtype().is(py::dtype::of<float>()))
    throw py::type_error(fmt::format("{} must be float32, got {} (convert it with .astype(numpy.float32))", what,
                                     std::string(py::str(a.dtype()))));
  return py::array_t<float, py::array::c_style>::ensure(a);
}

}  // namespace

py::array to_numpy(const Tensor& t) {
  TRIB_CHECK(t.defined(), InvalidArgument, "an undefined tensor has no array");
  std::vector<py::ssize_t> shape(t.shape().dims().begin(), t.shape().dims().end());
  // The capsule owns a handle to the tensor: its storage lives as long as the array does.
  auto* keep = new Tensor(t);
  py::capsule owner(keep, [](void* p) { delete static_cast<Tensor*>(p); });
  switch (t.dtype()) {
    case DType::f32: return py::array_t<float>(shape, static_cast<float*>(t.raw_data()), owner);
    case DType::i32: return py::array_t<std::int32_t>(shape, static_cast<std::int32_t*>(t.raw_data()), owner);
    case DType::i64: return py::array_t<std::int64_t>(shape, static_cast<std::int64_t*>(t.raw_data()), owner);
  }
  throw InvalidArgument("a tensor of an unknown dtype");
}

Tensor features_from_numpy(const py::handle& obj, const Shape& example, const std::string& what) {
  auto a = as_float32(obj, what);
  const std::int64_t per_row = example.numel();
  const bool full = a.ndim() == example.rank() + 1 &&
                    std::equal(example.dims().begin(), example.dims().end(), a.shape() + 1);
  const bool flat = a.ndim() == 2 && a.shape(1) == per_row;
  if (!(a.ndim() >= 1 && (full || flat)))
    throw InvalidArgument(fmt::format("{} has shape {} but the model takes (N, {}) or (N, {}) (N examples of input {})",
                                      what, shape_text(a), fmt::join(example.dims(), ", "), per_row,
                                      example.to_string()));
  const std::int64_t rows = a.shape(0);
  TRIB_CHECK(rows > 0, InvalidArgument, "{} holds no examples (shape {})", what, shape_text(a));
  std::vector<std::int64_t> dims{rows};
  dims.insert(dims.end(), example.dims().begin(), example.dims().end());
  Tensor t = Tensor::empty(DType::f32, Shape(dims));
  std::memcpy(t.raw_data(), a.data(), t.nbytes());
  return t;
}

Tensor labels_from_numpy(const py::handle& obj, std::int64_t rows, std::int64_t classes, const std::string& what) {
  py::array a = as_array(obj, what, "integers");
  const char kind = a.dtype().kind();
  if (kind != 'i' && kind != 'u')
    throw py::type_error(fmt::format("{} must be integer class indices, got {} (convert it with .astype(numpy.int64))",
                                     what, std::string(py::str(a.dtype()))));
  if (a.ndim() != 1 || a.shape(0) != rows)
    throw InvalidArgument(fmt::format("{} has shape {} but ({},) was expected: one class index per example", what,
                                      shape_text(a), rows));
  auto wide = py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>::ensure(a);
  Tensor t = Tensor::empty(DType::i32, Shape{rows});
  std::int32_t* out = t.data<std::int32_t>();
  const std::int64_t* in = wide.data();
  for (std::int64_t i = 0; i < rows; ++i) {
    TRIB_CHECK(in[i] >= 0 && in[i] < classes, InvalidArgument, "{}[{}] is {}, outside the model's classes [0, {})",
               what, i, in[i], classes);
    out[i] = static_cast<std::int32_t>(in[i]);
  }
  return t;
}

Tensor tensor_from_numpy(const py::handle& obj, const std::string& what) {
  auto a = as_float32(obj, what);
  std::vector<std::int64_t> dims(a.shape(), a.shape() + a.ndim());
  Tensor t = Tensor::empty(DType::f32, Shape(dims));
  std::memcpy(t.raw_data(), a.data(), t.nbytes());
  return t;
}

}  // namespace trib::python
