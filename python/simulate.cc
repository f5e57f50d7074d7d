// murmur.simulate's C++ half: a scenario from text, a file or nothing, with
// overrides set by name through config::SetScenarioField (as `murmur sim`'s
// flags are), validated by sim::ValidateScenario, and run by
// sim::RunScenario, the function `murmur sim` calls. The run releases the
// GIL; a progress callback takes it back for each call. Ctrl-C (SIGINT, when
// the run is on the main thread and Python's default handler is in place)
// and an exception raised by the callback stop the run between events.
#include <csignal>

#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "config/files.h"
#include "config/scenario_fields.h"
#include "engine/algorithms.h"
#include "proto/options.pb.h"
#include "python/bindings.h"
#include "sim/run/scenario.h"
#include "sim/runner.h"

namespace py = pybind11;

namespace murmur::python {

namespace {

using google::protobuf::FieldDescriptor;

py::handle scenario_error;

// The run SIGINT stops, and whether SIGINT came (the handler may touch only lock-free atomics).
std::atomic<std::atomic<bool>*> sigint_target{nullptr};
std::atomic<bool> sigint_seen{false};
static_assert(std::atomic<std::atomic<bool>*>::is_always_lock_free && std::atomic<bool>::is_always_lock_free);

extern "C" void OnSigint(int) {
  sigint_seen.store(true);
  if (std::atomic<bool>* target = sigint_target.load()) target->store(true);
}

// Installs OnSigint for one run and puts back the handler it replaced.
class SigintScope {
 public:
  SigintScope(bool install, std::atomic<bool>* target) {
    if (!install || sigint_target.load() != nullptr) return;  // not asked, or an outer run has it
    sigint_seen.store(false);
    sigint_target.store(target);
    struct sigaction action = {};
    action.sa_handler = OnSigint;
    sigemptyset(&action.sa_mask);
    installed_ = sigaction(SIGINT, &action, &previous_) == 0;
    if (!installed_) sigint_target.store(nullptr);
  }
  ~SigintScope() {
    if (!installed_) return;
    sigaction(SIGINT, &previous_, nullptr);
    sigint_target.store(nullptr);
  }
  SigintScope(const SigintScope&) = delete;
  SigintScope& operator=(const SigintScope&) = delete;
  bool interrupted() const { return installed_ && sigint_seen.load(); }

 private:
  bool installed_ = false;
  struct sigaction previous_ = {};
};

const char* TypeName(const FieldDescriptor* f) {
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING: return "str";
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64: return "int";
    case FieldDescriptor::CPPTYPE_DOUBLE: return "float";
    case FieldDescriptor::CPPTYPE_BOOL: return "bool";
    default: return "other";
  }
}

// Every name simulate takes: [(name, type, repeated, default text, help,
// path)], the path where a scenario file nests it ("spec.nodes",
// "faults.drop", "threads").
py::list ScenarioFieldList() {
  py::list out;
  for (const config::ScenarioField& field : config::ScenarioFields()) {
    const FieldDescriptor* f = field.field;
    const std::string path = field.holder != nullptr ? field.holder->name() + "." + f->name()
                             : f->containing_type() == proto::JobSpec::descriptor() ? "spec." + f->name()
                                                                                    : f->name();
    out.append(py::make_tuple(field.name, TypeName(f), f->is_repeated(), config::DefaultText(f),
                              f->options().GetExtension(proto::help), path));
  }
  return out;
}

std::string UnknownField(const std::string& name) {
  std::string message = "unknown scenario field '" + name + "'";
  std::vector<std::string> near = config::SimilarScenarioFields(name);
  if (!near.empty()) {
    message += " (did you mean ";
    for (std::size_t i = 0; i < near.size(); ++i)
      message += (i == 0 ? "'" : i + 1 == near.size() ? " or '" : ", '") + near[i] + "'";
    message += "?)";
  }
  return message;
}

// kind: "default" (source ignored), "text" (protobuf text or JSON) or "path".
// Returns (the serialized proto::Scenario, warnings, its plan): the scenario
// is planned here, once (sim::PlanScenario), and run from that plan.
py::tuple LoadScenario(const std::string& kind, const std::string& source,
                       const std::vector<std::pair<std::string, std::string>>& overrides) {
  proto::Scenario scenario;
  std::vector<std::string> warnings;
  if (kind == "text" || kind == "path") {
    auto loaded = kind == "text" ? config::ParseScenario(source, "scenario", &warnings)
                                 : config::LoadScenarioFile(source, &warnings);
    RaiseIfError(loaded.status(), scenario_error);
    scenario = std::move(loaded).value();
  } else if (kind != "default") {
    throw py::value_error("scenario kind '" + kind + "' is not default, text or path");
  }
  for (const auto& [name, text] : overrides) {
    const config::ScenarioField* field = config::FindScenarioField(name);
    if (field == nullptr) Raise(scenario_error, UnknownField(name));
    RaiseIfError(config::SetScenarioField(scenario, *field, text, "scenario field '" + name + "'"),
                 scenario_error);
  }
  auto plan = sim::PlanScenario(scenario);
  RaiseIfError(plan.status(), scenario_error);
  if (!scenario.plot().empty())
    Raise(scenario_error,
          "scenario field 'plot': plots are drawn by the murmur CLI; from Python, plot result.metrics "
          "(docs/python.md)");
  return py::make_tuple(py::bytes(scenario.SerializeAsString()), warnings,
                        std::make_shared<sim::ScenarioPlan>(std::move(plan).value()));
}

proto::Scenario FromBytes(const py::bytes& bytes) {
  proto::Scenario scenario;
  if (!scenario.ParseFromString(std::string(bytes)))
    Raise(scenario_error, "not a serialized scenario (make one with murmur.load_scenario)");
  return scenario;
}

py::dict PointDict(const sim::EvalPoint& p) {
  py::dict d;
  d["round"] = p.round;
  d["virtual_s"] = p.virtual_s;
  d["wall_s"] = p.wall_s;
  d["acc_mean"] = p.acc_mean;
  d["acc_min"] = p.acc_min;
  d["acc_max"] = p.acc_max;
  d["loss_mean"] = p.loss_mean;
  d["avg_acc"] = p.avg_acc;
  d["avg_loss"] = p.avg_loss;
  d["train_loss"] = p.train_loss;
  d["consensus"] = p.consensus;
  d["bytes_sent"] = p.bytes_sent;
  d["bytes_received"] = p.bytes_received;
  d["messages_lost"] = p.messages_lost;
  d["online"] = p.online;
  d["epsilon"] = p.epsilon;
  d["stop"] = p.stop;
  return d;
}

template <typename T, typename Get>
py::array_t<T> Column(const std::vector<sim::EvalPoint>& points, Get get) {
  py::array_t<T> a(static_cast<py::ssize_t>(points.size()));
  auto out = a.template mutable_unchecked<1>();
  for (std::size_t i = 0; i < points.size(); ++i) out(static_cast<py::ssize_t>(i)) = get(points[i]);
  return a;
}

// The metrics as columns, in --metrics-csv's order (sim/run/metrics.h).
py::dict Columns(const std::vector<sim::EvalPoint>& pts) {
  using P = sim::EvalPoint;
  py::dict c;
  c["round"] = Column<std::uint64_t>(pts, [](const P& p) { return p.round; });
  c["virtual_s"] = Column<double>(pts, [](const P& p) { return p.virtual_s; });
  c["wall_s"] = Column<double>(pts, [](const P& p) { return p.wall_s; });
  c["acc_mean"] = Column<double>(pts, [](const P& p) { return p.acc_mean; });
  c["acc_min"] = Column<double>(pts, [](const P& p) { return p.acc_min; });
  c["acc_max"] = Column<double>(pts, [](const P& p) { return p.acc_max; });
  c["loss_mean"] = Column<double>(pts, [](const P& p) { return p.loss_mean; });
  c["avg_acc"] = Column<double>(pts, [](const P& p) { return p.avg_acc; });
  c["avg_loss"] = Column<double>(pts, [](const P& p) { return p.avg_loss; });
  c["train_loss"] = Column<double>(pts, [](const P& p) { return p.train_loss; });
  c["consensus"] = Column<double>(pts, [](const P& p) { return p.consensus; });
  c["bytes_sent"] = Column<std::uint64_t>(pts, [](const P& p) { return p.bytes_sent; });
  c["bytes_received"] = Column<std::uint64_t>(pts, [](const P& p) { return p.bytes_received; });
  c["messages_lost"] = Column<std::uint64_t>(pts, [](const P& p) { return p.messages_lost; });
  c["online"] = Column<std::uint32_t>(pts, [](const P& p) { return p.online; });
  c["epsilon"] = Column<double>(pts, [](const P& p) { return p.epsilon; });
  py::list stop;
  for (const P& p : pts) stop.append(p.stop);
  c["stop"] = stop;
  return c;
}

// What `murmur sim` prints after its table (apps/murmur/cmd_sim.cc), as numbers.
py::dict SummaryDict(const sim::RunSummary& r, const proto::Scenario& s) {
  const proto::JobSpec& spec = s.spec();
  const bool federated = engine::IsFederatedAlgorithm(spec.algorithm());
  const std::uint32_t learning = r.learning_nodes > 0 ? r.learning_nodes : spec.nodes();
  py::dict d;
  d["description"] = r.description;
  d["federated"] = federated;
  d["params_per_node"] = r.params_per_node;
  d["learning_nodes"] = learning;
  d["evaluated_nodes"] =
      federated ? std::size_t{1}
                : std::min<std::size_t>(s.eval_nodes() == 0 ? learning : s.eval_nodes(), learning);
  d["rounds_done"] = r.rounds_done;
  d["wall_s"] = r.wall_s;
  d["virtual_s"] = r.virtual_s;
  d["rounds_per_s"] = r.wall_s > 0 ? static_cast<double>(r.rounds_done) / r.wall_s : 0.0;
  d["peak_rss_bytes"] = r.peak_rss_bytes;
  d["state_bytes"] = r.state_bytes;
  d["messages_sent"] = r.messages_sent;
  d["dense_bytes"] = static_cast<double>(r.messages_sent) * 4.0 * static_cast<double>(r.params_per_node);
  py::dict faults;
  faults["sent"] = r.faults.sent;
  faults["partitioned"] = r.faults.partitioned;
  faults["dropped"] = r.faults.dropped;
  faults["corrupted"] = r.faults.corrupted;
  faults["duplicated"] = r.faults.duplicated;
  faults["reordered"] = r.faults.reordered;
  faults["delayed"] = r.faults.delayed;
  faults["corrupt_rejected"] = r.corrupt_rejected;
  py::dict refused;
  for (std::size_t k = 0; k < kRefusalKinds; ++k)
    refused[RefusalName(static_cast<Refusal>(k))] = r.refused[k];
  faults["corrupt_accepted"] = r.corrupt_accepted;
  d["faults"] = faults;
  d["refused"] = refused;
  d["stop_reason"] = r.stop_reason;
  d["epsilon"] = r.epsilon;
  d["contributors"] = r.contributors;
  d["clients"] = r.clients;
  return d;
}

// Runs a planned scenario (LoadScenario's). `progress` (None or callable(done, total,
// point dict or None)); `learner`, `initial`, `evaluate`: the caller's
// learning (MakePythonLearning), `learner` None for murmur's own. Returns
// {"columns", "summary", "interrupted"}; an exception a callback raised is
// raised here once the run has stopped.
py::dict Run(const std::shared_ptr<sim::ScenarioPlan>& plan, const py::object& progress, bool handle_sigint,
             const py::object& learner, const py::object& initial, const py::object& evaluate) {
  if (plan == nullptr) throw py::type_error("run takes the plan load_scenario gave");
  const proto::Scenario& scenario = plan->scenario();
  RunErrors errors;
  sim::ProgressFn report;
  if (!progress.is_none()) {
    report = [&](std::uint64_t done, std::uint64_t total, const sim::EvalPoint* p) {
      if (errors.failed()) return;
      py::gil_scoped_acquire gil;
      try {
        progress(done, total, p != nullptr ? py::object(PointDict(*p)) : py::object(py::none()));
      } catch (py::error_already_set& e) {
        errors.Fail(std::move(e));
      }
    };
  }
  std::unique_ptr<sim::ExternalLearning> learning;
  if (!learner.is_none()) {
    learning = MakePythonLearning(learner, initial, evaluate, errors);
  } else if (!initial.is_none() || !evaluate.is_none()) {
    throw py::type_error("initial and evaluate go with learner=");
  }
  sim::RunOptions options;
  options.interrupt = &errors.stop;
  options.learning = learning.get();
  Result<sim::RunSummary> run = Status::Internal("not run");
  bool by_sigint = false;
  {
    SigintScope sigint(handle_sigint, &errors.stop);
    py::gil_scoped_release release;
    run = sim::RunScenario(*plan, report, options);
    by_sigint = sigint.interrupted();
  }
  learning.reset();  // its callbacks hold Python references: let them go with the GIL held
  if (errors.raised) throw std::move(*errors.raised);
  RaiseIfError(run.status(), scenario_error);
  py::dict out;
  out["columns"] = Columns(run->points);
  out["summary"] = SummaryDict(*run, scenario);
  out["interrupted"] = by_sigint;
  return out;
}

}  // namespace

void BindSimulate(py::module_& m) {
  // Held for the life of the process (the module keeps it as an attribute too).
  scenario_error = py::exception<void>(m, "ScenarioError", PyExc_ValueError).release();
  m.def("scenario_fields", &ScenarioFieldList,
        "[(name, type, repeated, default, help)] for every scenario field simulate takes by name");
  // A checked scenario, opaque to Python: what run() runs.
  py::class_<sim::ScenarioPlan, std::shared_ptr<sim::ScenarioPlan>>(m, "ScenarioPlan");
  m.def("load_scenario", &LoadScenario, py::arg("kind"), py::arg("source"), py::arg("overrides"),
        "(serialized scenario, warnings, plan) from protobuf text / JSON, a file, or the defaults, with "
        "overrides");
  m.def(
      "scenario_text",
      [](const py::bytes& serialized) { return config::ToTextWithDefaults(FromBytes(serialized)); },
      py::arg("scenario"), "the scenario as protobuf text, every field shown (murmur sim --print-scenario)");
  m.def("run", &Run, py::arg("plan"), py::arg("progress"), py::arg("handle_sigint"), py::arg("learner"),
        py::arg("initial"), py::arg("evaluate"),
        "runs a planned scenario; returns {'columns', 'summary', 'interrupted'}");
}

}  // namespace murmur::python
