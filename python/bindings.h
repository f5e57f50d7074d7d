// The pieces of the extension module murmur._murmur (python/module.cc), one
// per file: scenarios and runs (simulate.cc), topologies (topology.cc) and
// compressors (compress.cc). Each adds its functions to the module.
//
// Errors a caller can cause raise murmur.ScenarioError, murmur.TopologyError
// or murmur.CompressionError (all ValueError), TypeError for a value of the
// wrong type; nothing a caller passes aborts the interpreter.
#pragma once

#include <string>

#include <pybind11/pybind11.h>

#include "core/status.h"

namespace murmur::python {

// Raises `error` (a Python exception type) with `status`'s message when it is not ok.
void RaiseIfError(const Status& status, pybind11::handle error);
[[noreturn]] void Raise(pybind11::handle error, const std::string& message);

void BindSimulate(pybind11::module_& m);
void BindTopology(pybind11::module_& m);
void BindCompress(pybind11::module_& m);

}  // namespace murmur::python
