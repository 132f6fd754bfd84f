// Tensors and numpy arrays. Out of the library, a tensor becomes an array over the tensor's
// own memory, kept alive by a capsule holding the tensor (no copy). Into it, arrays are
// checked (dtype, shape, label range) and copied: the training loop and its prefetching
// thread read them without the GIL, while Python may change or free the array.
#pragma once

#include <cstdint>
#include <string>

#include <pybind11/numpy.h>

#include "bindings.h"
#include "trib/core/tensor.h"

namespace trib::python {

// A numpy array sharing `t`'s storage (writable: writing it changes the tensor).
py::array to_numpy(const Tensor& t);

// f32 features of `example` shape per row: an array [N, example...] or [N, example.numel()]
// of float32. `what` names it in errors ("x", "batch 3's x"). TypeError for another dtype or
// a non-array, ValueError (InvalidArgument) for a shape that does not fit.
Tensor features_from_numpy(const py::handle& obj, const Shape& example, const std::string& what);

// i32 labels [rows] in [0, classes), from an array of any integer dtype.
Tensor labels_from_numpy(const py::handle& obj, std::int64_t rows, std::int64_t classes, const std::string& what);

// A float32 array copied into a new tensor of the array's shape (a variable's new value).
Tensor tensor_from_numpy(const py::handle& obj, const std::string& what);

}  // namespace trib::python
