// murmur.compress / murmur.decompress's C++ half: compression::MakeCompressor
// and Update::Encode / Update::Decode, the code a gossip node sends and
// receives with. A CompressorState carries what a node keeps from one call
// to the next (error-feedback residual, DGC momentum, PowerSGD's Q, the round
// counter) and the random stream of stochastic compressors, drawn as a gossip
// node draws it: Rng(seed, node, kCompression).
//
// Arrays are checked, not converted: a float32, C-contiguous, one-dimensional
// NumPy array (a view of it is read in place, without a copy).
#include <memory>
#include <string>
#include <vector>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "compression/compressor.h"
#include "compression/update.h"
#include "core/rng.h"
#include "python/bindings.h"

namespace py = pybind11;

namespace murmur::python {

namespace {

py::handle compression_error;

struct PyCompressorState {
  std::string spec;  // the compressor it was made for
  std::size_t size = 0;
  compression::CompressorState state;
  Rng rng;
  PyCompressorState(std::string s, std::size_t n, std::uint64_t seed, std::uint64_t node)
      : spec(std::move(s)), size(n), rng(seed, node, RngPurpose::kCompression) {
    state.node = node;
  }
};

Layout LayoutOf(const std::vector<std::vector<std::int64_t>>& shapes, std::size_t n) {
  Layout layout;
  if (shapes.empty()) return layout;  // one flat tensor
  std::size_t total = 0;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    std::size_t size = 1;
    for (std::int64_t d : shapes[i]) {
      if (d <= 0 || d > (std::int64_t{1} << 32))
        Raise(compression_error, "shapes[" + std::to_string(i) + "] has dimension " + std::to_string(d) +
                                     "; dimensions are positive");
      size *= static_cast<std::size_t>(d);
      if (size > n) break;
    }
    total += size;
    if (total > n) break;
    std::string name = "t";  // appended, not "t" + ...: GCC 12 warns falsely (-Wrestrict) on that
    name += std::to_string(i);
    layout.Add(std::move(name), shapes[i]);
  }
  if (total != n)
    Raise(compression_error,
          "shapes hold " + std::to_string(total) + "+ elements but the array has " + std::to_string(n));
  return layout;
}

// (wire bytes, state).
py::tuple Compress(const std::string& spec, const py::handle& array, std::shared_ptr<PyCompressorState> state,
                   std::uint64_t seed, std::uint64_t node,
                   const std::vector<std::vector<std::int64_t>>& shapes) {
  auto made = compression::MakeCompressor(spec);
  RaiseIfError(made.status(), compression_error);
  const compression::Compressor& compressor = **made;
  std::span<const float> delta = FloatView(array, "array", compression_error);
  const Layout layout = LayoutOf(shapes, delta.size());
  if (state == nullptr) {
    state = std::make_shared<PyCompressorState>(spec, delta.size(), seed, node);
  } else {
    if (state->spec != spec)
      Raise(compression_error, "the state belongs to compressor '" + state->spec + "', not '" + spec + "'");
    if (state->size != delta.size())
      Raise(compression_error, "the state is for arrays of " + std::to_string(state->size) +
                                   " elements, got " + std::to_string(delta.size()));
  }
  std::vector<std::uint8_t> bytes;
  {
    py::gil_scoped_release release;  // the array stays referenced by the caller's frame
    std::shared_ptr<const compression::Update> update =
        compressor.Compress(delta, layout, state->state, state->rng);
    bytes.reserve(update->EncodedSize());
    update->Encode(bytes);
  }
  return py::make_tuple(py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size()), state);
}

py::array_t<float> Decompress(const py::bytes& wire, std::uint64_t max_elements) {
  const std::string bytes = wire;
  compression::DecodeLimits limits;
  limits.max_elements = max_elements;
  Result<compression::Update> update = Status::Internal("not decoded");
  {
    py::gil_scoped_release release;
    update = compression::Update::Decode({reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()},
                                         limits);
  }
  RaiseIfError(update.status(), compression_error);
  py::array_t<float> out(static_cast<py::ssize_t>(update->size()));
  std::span<float> dense(out.mutable_data(), update->size());
  Status added;
  {
    py::gil_scoped_release release;  // `out` is not visible to Python yet
    std::fill(dense.begin(), dense.end(), 0.0f);
    added = update->AddTo(dense);
  }
  RaiseIfError(added, compression_error);
  return out;
}

py::array_t<float> FloatArray(const std::vector<float>& v) {
  py::array_t<float> out(static_cast<py::ssize_t>(v.size()));
  std::copy(v.begin(), v.end(), out.mutable_data());
  return out;
}

}  // namespace

void BindCompress(py::module_& m) {
  compression_error = py::exception<void>(m, "CompressionError", PyExc_ValueError).release();
  py::class_<PyCompressorState, std::shared_ptr<PyCompressorState>>(
      m, "CompressorState", "what one sender keeps between compress calls (error feedback, round, RNG)")
      .def_property_readonly("spec", [](const PyCompressorState& s) { return s.spec; })
      .def_property_readonly("size", [](const PyCompressorState& s) { return s.size; })
      .def_property_readonly("node", [](const PyCompressorState& s) { return s.state.node; })
      .def_property_readonly("round", [](const PyCompressorState& s) { return s.state.round; })
      .def_property_readonly(
          "residual", [](const PyCompressorState& s) { return FloatArray(s.state.residual); },
          "the error-feedback residual e (a copy; empty before the first call or without ef)")
      .def_property_readonly(
          "momentum", [](const PyCompressorState& s) { return FloatArray(s.state.momentum); },
          "DGC momentum (a copy; empty unless the compressor keeps it)")
      .def("__repr__", [](const PyCompressorState& s) {
        return "<murmur.CompressorState '" + s.spec + "' size " + std::to_string(s.size) + " round " +
               std::to_string(s.state.round) + ">";
      });
  m.def("compress", &Compress, py::arg("spec"), py::arg("array"), py::arg("state"), py::arg("seed"),
        py::arg("node"), py::arg("shapes"), "(wire bytes, state) of one compressed array");
  m.def("decompress", &Decompress, py::arg("wire"), py::arg("max_elements"),
        "the dense float32 array that wire bytes stand for; validating decoder");
}

}  // namespace murmur::python
