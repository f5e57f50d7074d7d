// Learners written in Python (murmur.simulate(..., learner=...)): each
// learning node gets an object made by the caller's factory, which murmur's
// algorithms drive through LocalLearner like their own ml::MlLearner. The
// node's ParamVector reaches Python as a NumPy view of its floats (no copy),
// writable for train() and grad, read-only for gradient()'s params; the
// node's share holds its own read-only arrays of the spec's training data
// (copies, the features one copy shared by all nodes), which a learner may
// keep after the run; the params and evaluate()'s test arrays are views,
// valid during the call only.
//
// Every call takes the GIL and runs on the simulation's thread, one at a
// time, in the scenario's order (ExternalLearning::concurrent false), so a
// run stays deterministic. The first exception a callback raises stops the
// run between events and is raised by simulate().
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include "ml/dataset.h"
#include "ml/schedule.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace murmur::python {

namespace {

// The most FLOPs a Python learner may say one step costs: 10^15 (a step
// of days on the simulator's slowest device profiles) keeps every finish
// time inside the simulator's nanosecond clock.
constexpr double kMaxFlopsPerStep = 1e15;

// A NumPy view of `n` values at `data` (no copy; the memory's owner outlives the call).
template <typename T>
py::array_t<T> View(const T* data, std::vector<py::ssize_t> shape, bool writable) {
  py::capsule owner(data, [](void*) {});  // nothing to free: the view only borrows
  py::array_t<T> a(std::move(shape), const_cast<T*>(data), owner);
  if (!writable) a.attr("setflags")(py::arg("write") = false);
  return a;
}

py::array_t<float> ParamsView(const ParamVector& p, bool writable) {
  return View(p.data(), {static_cast<py::ssize_t>(p.size())}, writable);
}

// The float32 arrays made of 8-bit datasets, one per dataset (keyed by its
// address) for the whole run, so that every node shares one. Released with
// the GIL held, whichever thread drops the last reference.
using FeatureCache = std::shared_ptr<py::dict>;

FeatureCache NewFeatureCache() {
  return FeatureCache(new py::dict(), [](py::dict* d) {
    py::gil_scoped_acquire gil;
    delete d;
  });
}

// The samples of `d` as a read-only (n, dim) float32 array: a view of a float
// dataset; for a byte one, a converted copy (pixel / 255 for images, the
// token id for text, as the native models read them) made once and kept in
// `cache`.
py::array_t<float> Features(const ml::Dataset& d, py::dict& cache) {
  const std::vector<py::ssize_t> shape = {static_cast<py::ssize_t>(d.num_samples),
                                          static_cast<py::ssize_t>(d.dim)};
  if (d.type == ml::SampleType::kFloat32) return View(d.features.data(), shape, false);
  py::int_ key(reinterpret_cast<std::uintptr_t>(&d));
  if (cache.contains(key)) return cache[key].cast<py::array_t<float>>();
  py::array_t<float> a(shape);
  const std::vector<ml::SampleIndex> all = ml::AllIndices(d);
  d.Gather(all, a.mutable_data());
  a.attr("setflags")(py::arg("write") = false);
  cache[key] = a;
  return a;
}

py::array_t<std::int32_t> Labels(const ml::Dataset& d) {
  return View(d.labels.data(), {static_cast<py::ssize_t>(d.labels.size())}, false);
}

py::array_t<ml::SampleIndex> Samples(std::span<const ml::SampleIndex> s) {
  return View(s.data(), {static_cast<py::ssize_t>(s.size())}, false);
}

double LossOf(const py::object& value, const char* method, RunErrors& errors) {
  try {
    return value.cast<double>();
  } catch (const py::cast_error&) {
    errors.Fail(PyExc_TypeError, std::string("learner.") + method +
                                     " must return the loss as a number, got " +
                                     std::string(py::str(py::type::of(value).attr("__name__"))));
    return 0;
  }
}

class PyLearner final : public LocalLearner {
 public:
  PyLearner(py::object learner, ml::LrSchedule schedule, double flops_per_step, RunErrors& errors)
      : learner_(std::move(learner)),
        schedule_(schedule),
        flops_per_step_(flops_per_step),
        errors_(errors),
        custom_rate_(py::hasattr(learner_, "learning_rate")) {}
  ~PyLearner() override {
    py::gil_scoped_acquire gil;
    learner_ = py::object();
  }
  PyLearner(const PyLearner&) = delete;
  PyLearner& operator=(const PyLearner&) = delete;

  double Train(ParamVector& params, int steps) override {
    if (errors_.failed()) return 0;
    py::gil_scoped_acquire gil;
    try {
      return LossOf(learner_.attr("train")(ParamsView(params, true), steps), "train", errors_);
    } catch (py::error_already_set& e) {
      errors_.Fail(std::move(e));
      return 0;
    }
  }

  double Gradient(const ParamVector& params, ParamVector& grad) override {
    if (errors_.failed()) return 0;
    py::gil_scoped_acquire gil;
    try {
      return LossOf(learner_.attr("gradient")(ParamsView(params, false), ParamsView(grad, true)), "gradient",
                    errors_);
    } catch (py::error_already_set& e) {
      errors_.Fail(std::move(e));
      return 0;
    }
  }

  double LearningRate(std::uint64_t step) const override {
    if (!custom_rate_ || errors_.failed()) return schedule_(static_cast<std::int64_t>(step));
    py::gil_scoped_acquire gil;
    try {
      return LossOf(learner_.attr("learning_rate")(step), "learning_rate", errors_);
    } catch (py::error_already_set& e) {
      errors_.Fail(std::move(e));
      return 0;
    }
  }

  double FlopsPerStep() const override { return flops_per_step_; }

 private:
  py::object learner_;
  ml::LrSchedule schedule_;
  double flops_per_step_;
  RunErrors& errors_;
  bool custom_rate_;
};

// An array that owns a copy of `n` values (a learner may keep it after
// simulate returns, when the run's memory is gone).
template <typename T>
py::array_t<T> Copy(const T* data, std::vector<py::ssize_t> shape) {
  py::array_t<T> a(std::move(shape), data);  // no base object: pybind11 copies
  a.attr("setflags")(py::arg("write") = false);
  return a;
}

// The training samples as Features gives them, but always an array that
// owns its floats: a float dataset is copied once into `cache` (shared by
// every node's share, like a byte dataset's conversion).
py::array_t<float> OwnedFeatures(const ml::Dataset& d, py::dict& cache) {
  if (d.type != ml::SampleType::kFloat32) return Features(d, cache);
  py::int_ key(reinterpret_cast<std::uintptr_t>(&d));
  if (cache.contains(key)) return cache[key].cast<py::array_t<float>>();
  py::array_t<float> a =
      Copy(d.features.data(), {static_cast<py::ssize_t>(d.num_samples), static_cast<py::ssize_t>(d.dim)});
  cache[key] = a;
  return a;
}

// A node's share: its arrays are its own (copies, or the run's shared
// conversion), so that a learner may keep them beyond the run.
py::object ShareObject(const sim::NodeShare& share, py::dict& cache) {
  py::dict d;
  d["node"] = share.node;
  d["samples"] = Copy(share.samples.data(), {static_cast<py::ssize_t>(share.samples.size())});
  d["features"] = OwnedFeatures(*share.train, cache);
  d["labels"] = Copy(share.train->labels.data(), {static_cast<py::ssize_t>(share.train->labels.size())});
  d["num_classes"] = share.train->num_classes;
  d["batch"] = share.options.batch;
  d["lr"] = share.options.lr;
  d["momentum"] = share.options.momentum;
  d["weight_decay"] = share.options.weight_decay;
  d["seed"] = share.seed;
  d["flops_per_step"] = share.flops_per_step;
  return py::module_::import("types").attr("SimpleNamespace")(**d);
}

}  // namespace

std::unique_ptr<sim::ExternalLearning> MakePythonLearning(const py::object& make_learner,
                                                          const py::object& initial,
                                                          const py::object& evaluate, RunErrors& errors) {
  auto learning = std::make_unique<sim::ExternalLearning>();
  learning->concurrent = false;
  if (!PyCallable_Check(make_learner.ptr()))
    throw py::type_error("learner must be callable: learner(share) -> object");
  FeatureCache cache = NewFeatureCache();
  learning->make_learner = [make_learner, &errors,
                            cache](const sim::NodeShare& share) -> Result<std::unique_ptr<LocalLearner>> {
    py::gil_scoped_acquire gil;
    const auto cancelled = Status::InvalidArgument("the learner factory raised (the exception follows)");
    try {
      py::object learner = make_learner(ShareObject(share, *cache));
      for (const char* method : {"train", "gradient"}) {
        if (!py::hasattr(learner, method)) {
          errors.Fail(PyExc_TypeError, "the learner for node " + std::to_string(share.node) + " (a " +
                                           std::string(py::str(py::type::of(learner).attr("__name__"))) +
                                           ") has no " + method + " method");
          return cancelled;
        }
      }
      double flops = share.flops_per_step;
      if (py::hasattr(learner, "flops_per_step")) flops = learner.attr("flops_per_step").cast<double>();
      // What a step costs sets the node's virtual time: a negative, NaN,
      // infinite or absurd count would run time backwards or past the
      // clock's range, so it is refused here, as a device trace's are.
      if (!(std::isfinite(flops) && flops >= 0 && flops <= kMaxFlopsPerStep)) {
        errors.Fail(PyExc_ValueError, "learner.flops_per_step of node " + std::to_string(share.node) +
                                          " must be a finite number of FLOPs in [0, 1e15], got " +
                                          std::string(py::str(py::float_(flops))));
        return cancelled;
      }
      ml::ScheduleOptions schedule = share.options.schedule;
      schedule.lr = share.options.lr;  // as ml::MlLearner: the spec's lr is the base rate
      return std::unique_ptr<LocalLearner>(
          std::make_unique<PyLearner>(std::move(learner), ml::LrSchedule(schedule), flops, errors));
    } catch (py::error_already_set& e) {
      errors.Fail(std::move(e));
      return cancelled;
    } catch (const py::cast_error&) {
      errors.Fail(PyExc_TypeError, "learner.flops_per_step must be a number");
      return cancelled;
    }
  };
  if (!initial.is_none()) {
    std::span<const float> values = FloatView(initial, "initial", PyExc_ValueError);
    learning->initial = ParamVector(values.size());
    std::copy(values.begin(), values.end(), learning->initial.span().begin());
  }
  if (!evaluate.is_none()) {
    if (!PyCallable_Check(evaluate.ptr()))
      throw py::type_error("evaluate must be callable: evaluate(params, features, labels, samples)");
    learning->evaluate = [evaluate, &errors, cache](const ParamVector& params, const ml::Dataset& test,
                                                    std::span<const ml::SampleIndex> samples) {
      ml::Evaluation e;
      e.count = static_cast<std::int64_t>(samples.size());
      if (errors.failed()) return e;
      py::gil_scoped_acquire gil;
      try {
        py::object r =
            evaluate(ParamsView(params, false), Features(test, *cache), Labels(test), Samples(samples));
        auto [accuracy, loss] = r.cast<std::pair<double, double>>();
        if (!(accuracy >= 0 && accuracy <= 1)) {
          errors.Fail(PyExc_ValueError, "evaluate must return an accuracy in [0, 1], got " +
                                            std::string(py::str(py::float_(accuracy))));
          return e;
        }
        e.accuracy = accuracy;
        e.loss = loss;
      } catch (py::error_already_set& ex) {
        errors.Fail(std::move(ex));
      } catch (const py::cast_error&) {
        errors.Fail(PyExc_TypeError, "evaluate must return (accuracy, loss)");
      }
      return e;
    };
  }
  return learning;
}

}  // namespace murmur::python
