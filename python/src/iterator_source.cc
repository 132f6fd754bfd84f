#include "iterator_source.h"

#include <fmt/format.h>

#include "arrays.h"
#include "trib/core/error.h"

namespace trib::python {

IteratorSource::IteratorSource(py::iterator iterator, Shape example, std::int64_t classes, std::int64_t batch,
                               InterruptStop* stop)
    : it_(std::move(iterator)), example_(std::move(example)), classes_(classes), batch_(batch), stop_(stop) {}

std::optional<data::Batch> IteratorSource::next() {
  py::gil_scoped_acquire gil;
  py::object item = py::reinterpret_steal<py::object>(PyIter_Next(it_.ptr()));
  if (!item) {
    if (PyErr_Occurred()) {
      py::error_already_set e;
      if (stop_ != nullptr && stop_->take_interrupt(e)) return std::nullopt;
      throw e;
    }
    return std::nullopt;  // the iterator is exhausted
  }
  const std::string what = fmt::format("batch {} of the iterator", pulled_);
  ++pulled_;
  if (!py::isinstance<py::tuple>(item) || py::len(item) != 2)
    throw py::type_error(fmt::format("{} must be an (x, y) tuple of numpy arrays, got {}", what,
                                     std::string(py::str(py::type::handle_of(item).attr("__name__")))));
  py::tuple xy = item.cast<py::tuple>();
  Tensor x = features_from_numpy(xy[0], example_, what + ": x");
  const std::int64_t rows = x.shape()[0];
  TRIB_CHECK(rows <= batch_, InvalidArgument, "{} has {} rows, more than the batch size {}: pass batch_size={} or "
             "smaller batches", what, rows, batch_, rows);
  Tensor y = labels_from_numpy(xy[1], rows, classes_, what + ": y");
  return data::Batch(std::move(x), std::move(y));
}

}  // namespace trib::python
