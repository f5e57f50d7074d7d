// The pieces of the extension module murmur._murmur (python/module.cc), one
// per file: scenarios and runs (simulate.cc), topologies (topology.cc) and
// compressors (compress.cc). Each adds its functions to the module.
//
// Errors a caller can cause raise murmur.ScenarioError, murmur.TopologyError
// or murmur.CompressionError (all ValueError), TypeError for a value of the
// wrong type; nothing a caller passes aborts the interpreter.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include <pybind11/pybind11.h>

#include "core/status.h"
#include "sim/run/external_learning.h"

namespace murmur::python {

// Raises `error` (a Python exception type) with `status`'s message when it is not ok.
void RaiseIfError(const Status& status, pybind11::handle error);
[[noreturn]] void Raise(pybind11::handle error, const std::string& message);

// `array` as floats, read in place: a float32, one-dimensional, C-contiguous
// NumPy array with fewer than 2^32 elements. TypeError for another type or
// dtype, `error` for another shape (`what` names the argument).
std::span<const float> FloatView(const pybind11::handle& array, const char* what, pybind11::handle error);

// What a run's Python callbacks (progress, learners, evaluation) share: the
// first exception one raised, kept to raise once the run has stopped, and
// the run's interrupt flag, which that exception raises.
struct RunErrors {
  std::atomic<bool> stop{false};
  std::optional<pybind11::error_already_set> raised;
  bool failed() const { return raised.has_value(); }
  // REQUIRES: the GIL is held.
  void Fail(pybind11::error_already_set&& e);
  // Fail with a new exception of `type`. REQUIRES: the GIL is held.
  void Fail(pybind11::handle type, const std::string& message);
};

// The caller's learners for sim::RunScenario (python/learner.cc):
// `make_learner(share)` returns an object with train(params, steps) and
// gradient(params, grad); `initial` (None or a float32 array) is every
// node's first model; `evaluate` (None or callable(params, features,
// labels, samples) -> (accuracy, loss)) measures models. The callbacks hold
// references and must be destroyed with the GIL held.
// REQUIRES: the GIL is held.
std::unique_ptr<sim::ExternalLearning> MakePythonLearning(const pybind11::object& make_learner,
                                                          const pybind11::object& initial,
                                                          const pybind11::object& evaluate,
                                                          RunErrors& errors);

void BindSimulate(pybind11::module_& m);
void BindTopology(pybind11::module_& m);
void BindCompress(pybind11::module_& m);

}  // namespace murmur::python
