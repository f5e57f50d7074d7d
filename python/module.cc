// murmur._murmur: the extension module under murmur's Python package
// (python/murmur/__init__.py wraps it; docs/python.md is its reference).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "core/simd.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace murmur::python {

void Raise(py::handle error, const std::string& message) {
  PyErr_SetString(error.ptr(), message.c_str());
  throw py::error_already_set();
}

void RaiseIfError(const Status& status, py::handle error) {
  if (!status.ok()) Raise(error, status.message());
}

std::span<const float> FloatView(const py::handle& array, const char* what, py::handle error) {
  if (!py::isinstance<py::array>(array))
    throw py::type_error(std::string(what) + " must be a NumPy array of float32, got " +
                         std::string(py::str(py::type::of(array).attr("__name__"))));
  auto a = py::reinterpret_borrow<py::array>(array);
  if (!a.dtype().is(py::dtype::of<float>()))
    throw py::type_error(std::string(what) + " must have dtype float32, got " +
                         std::string(py::str(a.dtype())));
  if (a.ndim() != 1)
    Raise(error, std::string(what) + " must be one-dimensional, got " + std::to_string(a.ndim()) +
                     " dimensions (pass array.ravel())");
  if ((a.flags() & py::array::c_style) == 0)
    Raise(error, std::string(what) + " must be contiguous (pass np.ascontiguousarray(array))");
  if (a.size() >= (py::ssize_t{1} << 32))
    Raise(error, std::string(what) + " has " + std::to_string(a.size()) +
                     " elements; murmur's vectors hold fewer than 2^32");
  return {static_cast<const float*>(a.data()), static_cast<std::size_t>(a.size())};
}

void RunErrors::Fail(py::error_already_set&& e) {
  if (!raised) raised.emplace(std::move(e));
  stop.store(true);
}

void RunErrors::Fail(py::handle type, const std::string& message) {
  PyErr_SetString(type.ptr(), message.c_str());
  Fail(py::error_already_set());
}

}  // namespace murmur::python

PYBIND11_MODULE(_murmur, m) {
  m.doc() = "murmur's simulator, topologies and compressors (bindings; use the murmur package)";
  m.attr("__version__") = MURMUR_VERSION;
  // As the programs do: MURMUR_SIMD caps the kernels (any other value is
  // refused at import), and Eigen's blocking is pinned.
  if (const murmur::Status s = murmur::CapSimdFromEnvironment(); !s.ok()) throw py::value_error(s.message());
  murmur::PinEigenBlocking();
  murmur::python::BindSimulate(m);
  murmur::python::BindTopology(m);
  murmur::python::BindCompress(m);
}
