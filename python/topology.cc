// murmur.topology's C++ half: a TopologySpec checked by
// topology::CheckTopologySpec and built by topology::MakeSchedule, described
// by topology::DescribeSchedule: the calls and the figures of `murmur
// topology`. Returns round 0's edges, the mixing matrices (CSR arrays) of
// round 0 or of the rounds a time-varying schedule's contraction covers, and
// the figures; the GIL is released while the schedule is built and analysed.
#include <string>
#include <utility>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "engine/topology.h"
#include "python/bindings.h"
#include "sim/net/link_costs.h"
#include "topology/report.h"

namespace py = pybind11;

namespace murmur::python {

namespace {

py::handle topology_error;

py::dict SpectralDict(const topology::SpectralInfo& s, double seconds) {
  py::dict d;
  d["rho"] = s.rho;
  d["gap"] = s.gap();
  d["converged"] = s.converged;
  d["method"] = s.method;
  d["seconds"] = seconds;
  return d;
}

// W as CSR arrays (indptr, indices, data), row i holding node i's weights.
py::tuple Csr(const topology::MixingMatrix& w) {
  py::array_t<std::int64_t> indptr(static_cast<py::ssize_t>(w.size()) + 1);
  py::array_t<std::int32_t> indices(static_cast<py::ssize_t>(w.num_entries()));
  py::array_t<double> data(static_cast<py::ssize_t>(w.num_entries()));
  auto ip = indptr.mutable_unchecked<1>();
  auto ix = indices.mutable_unchecked<1>();
  auto dx = data.mutable_unchecked<1>();
  py::ssize_t k = 0;
  ip(0) = 0;
  for (NodeId i = 0; i < w.size(); ++i) {
    for (const topology::MixingEntry& entry : w.Row(i)) {
      ix(k) = static_cast<std::int32_t>(entry.col);
      dx(k) = entry.weight;
      ++k;
    }
    ip(static_cast<py::ssize_t>(i) + 1) = k;
  }
  return py::make_tuple(indptr, indices, data);
}

py::dict MakeTopology(const std::string& kind, std::uint32_t nodes, std::uint64_t seed,
                      const std::string& weights, std::uint32_t degree, double prob, double beta,
                      double radius, const std::string& file, bool directed, std::uint64_t rounds,
                      const std::string& edge_list, const std::string& devices, const std::string& links,
                      const std::string& measured, double model_bytes) {
  topology::TopologySpec spec;
  spec.kind = kind;
  spec.nodes = nodes;
  spec.seed = seed;
  spec.degree = degree;
  spec.prob = prob;
  spec.beta = beta;
  spec.radius = radius;
  spec.file = file;
  spec.edges = edge_list;
  spec.directed = directed;
  // KIND as a job's topology field writes it ("regular:4", "edges:0 1;1 2"),
  // read as `murmur topology` reads it.
  RaiseIfError(engine::ApplyTopologyKindText(spec, /*nodes_given=*/nodes > 0), topology_error);
  if (!weights.empty()) {
    auto w = topology::ParseWeightOptions(weights);
    RaiseIfError(w.status(), topology_error);
    spec.weights = *w;
    spec.weights_given = true;
  }
  // Link costs for the link-aware kinds, read as `murmur topology` reads its
  // --devices, --links, --measured and --model-bytes (sim/net/link_costs.h).
  sim::LinkCostOptions cost_options;
  cost_options.devices = devices;
  cost_options.links = links;
  cost_options.measured = measured;
  cost_options.model_bytes = model_bytes;
  cost_options.nodes = spec.nodes;
  cost_options.seed = spec.seed;
  auto costs = sim::LinkCosts::Make(cost_options);
  RaiseIfError(costs.status(), topology_error);
  if ((*costs)->any()) {
    spec.nodes = (*costs)->nodes();
    spec.link_cost = (*costs)->cost();
  }
  RaiseIfError(topology::CheckTopologySpec(spec), topology_error);
  if (rounds > 4096) Raise(topology_error, "rounds must be in [1, 4096], got " + std::to_string(rounds));

  Result<std::unique_ptr<topology::Schedule>> made = Status::Internal("not built");
  Result<topology::TopologyReport> report = Status::Internal("not described");
  {
    py::gil_scoped_release release;
    made = topology::MakeSchedule(spec);
    if (made.ok()) report = topology::DescribeSchedule(**made, rounds);
  }
  RaiseIfError(made.status(), topology_error);
  RaiseIfError(report.status(), topology_error);
  topology::Schedule& schedule = **made;
  const topology::TopologyReport& r = *report;

  const std::vector<topology::Edge> edges = schedule.GraphAt(0).Edges();
  py::array_t<std::uint32_t> edge_array({static_cast<py::ssize_t>(edges.size()), py::ssize_t{2}});
  auto e = edge_array.mutable_unchecked<2>();
  for (std::size_t i = 0; i < edges.size(); ++i) {
    e(static_cast<py::ssize_t>(i), 0) = edges[i].u;
    e(static_cast<py::ssize_t>(i), 1) = edges[i].v;
  }
  py::dict d;
  d["kind"] = spec.kind;
  d["nodes"] = r.nodes;
  d["num_edges"] = r.edges;
  d["directed"] = r.directed;
  d["degree_min"] = r.degree.min;
  d["degree_mean"] = r.degree.mean;
  d["degree_max"] = r.degree.max;
  d["connected"] = r.connected;
  d["diameter"] =
      r.diameter.finite ? py::object(py::int_(r.diameter.value)) : py::object(py::float_(INFINITY));
  d["diameter_exact"] = r.diameter.exact;
  d["spectral"] = SpectralDict(r.spectral, r.spectral_seconds);
  d["period"] = r.period;
  if (r.period != 1) {
    d["rounds"] = r.rounds;
    d["contraction"] = SpectralDict(r.contraction, r.contraction_seconds);
    d["per_round"] = r.per_round;
  }
  d["edges"] = edge_array;
  // Round 0's matrix; for a time-varying schedule, those of the rounds its contraction covers.
  py::list mixing;
  const std::uint64_t kept = r.period == 1 ? 1 : r.rounds;
  for (std::uint64_t t = 0; t < kept; ++t) mixing.append(Csr(schedule.At(t)));
  d["mixing"] = mixing;
  return d;
}

}  // namespace

void BindTopology(py::module_& m) {
  topology_error = py::exception<void>(m, "TopologyError", PyExc_ValueError).release();
  m.def("topology_kinds", &topology::TopologyKinds, "the kinds topology() builds");
  m.def("topology", &MakeTopology, py::arg("kind"), py::arg("nodes"), py::arg("seed"), py::arg("weights"),
        py::arg("degree"), py::arg("prob"), py::arg("beta"), py::arg("radius"), py::arg("file"),
        py::arg("directed"), py::arg("rounds"), py::arg("edges"), py::arg("devices"), py::arg("links"),
        py::arg("measured"), py::arg("model_bytes"),
        "round 0's edges and mixing matrix (CSR arrays) and the figures murmur topology prints");
}

}  // namespace murmur::python
