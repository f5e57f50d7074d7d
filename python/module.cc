// murmur._murmur: the extension module under murmur's Python package
// (python/murmur/__init__.py wraps it; docs/python.md is its reference).
#include <pybind11/pybind11.h>

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

}  // namespace murmur::python

PYBIND11_MODULE(_murmur, m) {
  m.doc() = "murmur's simulator, topologies and compressors (bindings; use the murmur package)";
  m.attr("__version__") = MURMUR_VERSION;
  murmur::python::BindSimulate(m);
  murmur::python::BindTopology(m);
  murmur::python::BindCompress(m);
}
