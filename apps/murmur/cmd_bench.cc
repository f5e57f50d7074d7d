// murmur bench: whole-run benchmarks, each printed next to the floor it is
// measured against. `murmur bench <name>`; add a benchmark by adding a row to
// kBenchmarks.
#include <cxxopts.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "apps/murmur/bench.h"
#include "apps/murmur/command.h"
#include "core/param_vector.h"
#include "core/thread_pool.h"
#include "ml/cnn.h"
#include "ml/mlp.h"
#include "ml/model_spec.h"
#include "ml/optimizer.h"
#include "ml/synthetic.h"
#include "ml/trainer.h"

namespace murmur::cli {
namespace {

constexpr const char* kName = "bench";

// Training samples per second of `model` with Adam on random data.
double TrainRate(const ml::Model& model, const ml::Dataset& data, int batch, int threads, double seconds) {
  ParamVector params(model.layout());
  Rng init(1, 0, RngPurpose::kInit);
  model.InitParams(params, init);
  ml::Adam adam(params.size(), ml::AdamOptions{});
  ThreadPool pool(threads);
  ml::ScheduleOptions s{ml::ScheduleKind::kConstant, 1e-3};
  ml::Trainer trainer(model, adam, ml::LrSchedule(s), ml::TrainerOptions{batch, true, 1, 0}, &pool);
  std::vector<ml::SampleIndex> all = ml::AllIndices(data);
  trainer.RunEpoch(params, data, all, 0);  // warm-up: workspace, caches
  auto start = std::chrono::steady_clock::now();
  std::int64_t samples = 0;
  for (int e = 1; SecondsSince(start) < seconds; ++e)
    samples += trainer.RunEpoch(params, data, all, e).samples;
  return static_cast<double>(samples) / SecondsSince(start);
}

// One matrix product of the network, timed alone: its name, the FLOPs it
// does per training sample, and its measured GFLOP/s.
struct Product {
  std::string name;
  double flops_per_sample = 0;
  double rate = 0;
};

// Times every matrix product a training step of `cnn` does, each alone, at
// its shape and with the operand transposes of ml/cnn.cc: per layer the
// forward product, the weight gradient and (but for the first layer) the
// input gradient; per sample for a convolution, per chunk of `rows` for a
// dense layer.
std::vector<Product> CnnProducts(const ml::Cnn& cnn, std::int64_t rows, double seconds) {
  std::vector<Product> products;
  auto add = [&](std::string name, double flops_per_call, double calls_per_sample, auto&& run) {
    products.push_back(
        {std::move(name), flops_per_call * calls_per_sample, ProductRate(flops_per_call, seconds, run)});
  };
  auto dims = [](const char* what, std::int64_t m, std::int64_t k, std::int64_t n) {
    std::ostringstream os;
    os << what << ' ' << m << 'x' << k << 'x' << n;
    return os.str();
  };
  for (std::size_t l = 0; l < cnn.stages().size(); ++l) {
    const ml::Cnn::Stage& st = cnn.stages()[l];
    const bool first = l == 0;
    if (st.layer.kind == ml::CnnLayerKind::kConv) {
      // y (out x positions) = W (out x patch) cols (patch x positions).
      const std::int64_t m = st.out.c, k = st.in.c * st.layer.kernel * st.layer.kernel,
                         n = st.out.h * st.out.w;
      RowMatrixXf w = RowMatrixXf::Random(m, k), cols = RowMatrixXf::Random(k, n), y(m, n),
                  dy = RowMatrixXf::Random(m, n), dw = RowMatrixXf::Zero(m, k), dcols(k, n);
      const double flops = 2.0 * static_cast<double>(m * k * n);
      add(dims("conv forward", m, k, n), flops, 1, [&] { y.noalias() = w * cols; });
      add(dims("conv weight gradient", m, n, k), flops, 1, [&] { dw.noalias() += dy * cols.transpose(); });
      if (!first)
        add(dims("conv input gradient", k, m, n), flops, 1, [&] { dcols.noalias() = w.transpose() * dy; });
    } else if (st.layer.kind == ml::CnnLayerKind::kDense) {
      // z (rows x out) = a (rows x in) W (in x out).
      const std::int64_t r = rows, i = st.in.size(), o = st.out.size();
      RowMatrixXf a = RowMatrixXf::Random(r, i), w = RowMatrixXf::Random(i, o), z(r, o),
                  dy = RowMatrixXf::Random(r, o), dw = RowMatrixXf::Zero(i, o), dx(r, i);
      const double flops = 2.0 * static_cast<double>(r * i * o), per_sample = 1.0 / static_cast<double>(r);
      add(dims("dense forward", r, i, o), flops, per_sample, [&] { z.noalias() = a * w; });
      add(dims("dense weight gradient", i, r, o), flops, per_sample,
          [&] { dw.noalias() += a.transpose() * dy; });
      if (!first)
        add(dims("dense input gradient", r, o, i), flops, per_sample,
            [&] { dx.noalias() = dy * w.transpose(); });
    }
  }
  return products;
}

// FLOP-weighted rate of a set of products: total FLOPs over the sum of
// their times.
double WeightedRate(const std::vector<Product>& products, bool forward_only) {
  double total = 0, time = 0;
  for (const Product& p : products) {
    if (forward_only && p.name.find("forward") == std::string::npos) continue;
    total += p.flops_per_sample;
    time += p.flops_per_sample / p.rate;
  }
  return total / time;
}

// The convolutional model against its GEMM floor: the time its matrix
// products take alone (time = sum of flops_i / rate_i over every product of
// a training step), measured in the same run.
int BenchCnnTrain(const ml::Cnn& cnn, const ml::Dataset& data, int batch, int threads, double seconds) {
  const std::int64_t rows = std::min<std::int64_t>(batch, cnn.options().chunk_rows);
  const std::vector<Product> products = CnnProducts(cnn, rows, seconds / 8);
  for (const Product& p : products) std::printf("  Eigen GEMM, %s: %.1f GFLOP/s\n", p.name.c_str(), p.rate);
  const double floor = WeightedRate(products, false);
  std::printf(
      "GEMM floor of this network (every product of a training step, FLOP-weighted, one thread): "
      "%.1f GFLOP/s (forward products alone: %.1f)\n",
      floor, WeightedRate(products, true));
  for (int t : {1, threads}) {
    const double rate = TrainRate(cnn, data, batch, t, seconds);
    const double achieved = rate * cnn.FlopsPerSample() / 1e9;
    std::printf(
        "training batch %d, %d thread%s: %.0f samples/s = %.1f GFLOP/s = %.2f of the GEMM floor x %d\n",
        batch, t, t == 1 ? "" : "s", rate, achieved, achieved / (floor * t), t);
    if (threads == 1) break;
  }
  return kExitOk;
}

int BenchTrain(int argc, char** argv) {
  cxxopts::Options options("murmur bench train",
                           "Training samples/s of a model against the Eigen GEMM rate of its layer sizes.");
  // clang-format off
  options.add_options()
    ("model", "softmax, mlp:<width>,..., cnn:<layers>, cnn-fedavg or lenet5", cxxopts::value<std::string>()->default_value("mlp:256,128"))
    ("batch", "mini-batch size", cxxopts::value<int>()->default_value("64"))
    ("seconds", "seconds per measurement", cxxopts::value<double>()->default_value("3"))
    ("threads", "threads for the all-threads runs", cxxopts::value<int>()->default_value(std::to_string(HardwareThreads())))
    ("h,help", "show this help");
  // clang-format on
  std::string spec;
  int batch, threads;
  double seconds;
  try {
    auto args = options.parse(argc, argv);
    if (!args.unmatched().empty())
      return UsageError(kName, "unexpected argument '" + args.unmatched()[0] + "'");
    if (args.count("help")) {
      std::printf("%s\n", options.help().c_str());
      return kExitOk;
    }
    spec = args["model"].as<std::string>();
    batch = args["batch"].as<int>();
    threads = args["threads"].as<int>();
    seconds = args["seconds"].as<double>();
  } catch (const cxxopts::exceptions::exception& e) {
    return UsageError(kName, e.what());
  }
  if (batch < 1) return UsageError(kName, "--batch must be at least 1");
  if (threads < 1 || threads > 1024) return UsageError(kName, "--threads outside [1, 1024]");
  if (!(seconds > 0 && seconds <= 600)) return UsageError(kName, "--seconds outside (0, 600]");
  // Fashion-MNIST's shape, 1 x 28 x 28 (random values: speed does not depend on them).
  const std::int64_t shape[] = {1, 28, 28};
  auto model = ml::MakeModel(spec, shape, 10);
  if (!model.ok()) return UsageError(kName, model.status().message());
  const auto* mlp = dynamic_cast<const ml::Mlp*>(model->get());
  const double flops = (*model)->FlopsPerSample();
  ml::BlobsOptions data_options;
  data_options.num_samples = mlp != nullptr ? 8192 : 2048;
  data_options.dim = 784;
  ml::Dataset data = ml::MakeGaussianBlobs(data_options);
  data.shape = {1, 28, 28};

  std::printf("model %s: %zu parameters, %.4f MFLOP per sample (forward + backward matrix products)\n",
              spec.c_str(), (*model)->layout().total_size(), flops / 1e6);
  if (const auto* cnn = dynamic_cast<const ml::Cnn*>(model->get()))
    return BenchCnnTrain(*cnn, data, batch, threads, seconds);
  // The floor: the first layer's product at the chunk size the model multiplies
  // (its largest GEMM), and a large square product.
  std::int64_t rows = std::min<std::int64_t>(batch, mlp != nullptr ? mlp->options().chunk_rows : batch);
  std::int64_t out = mlp != nullptr ? mlp->widths()[1] : 10;
  double gemm1 = GemmRate(rows, 784, out, 1, seconds);
  double gemmn = GemmRate(rows, 784, out, threads, seconds);
  std::printf(
      "Eigen GEMM %lldx784x%lld (first layer, one chunk): 1 thread %.1f GFLOP/s, %d threads %.1f GFLOP/s\n",
      static_cast<long long>(rows), static_cast<long long>(out), gemm1, threads, gemmn);
  double big1 = GemmRate(1024, 1024, 1024, 1, seconds);
  double bign = GemmRate(1024, 1024, 1024, threads, seconds);
  std::printf("Eigen GEMM 1024x1024x1024: 1 thread %.1f GFLOP/s, %d threads %.1f GFLOP/s\n", big1, threads,
              bign);
  for (int t : {1, threads}) {
    double rate = TrainRate(**model, data, batch, t, seconds);
    double achieved = rate * flops / 1e9;
    double floor = t == 1 ? gemm1 : gemmn;
    std::printf(
        "training batch %d, %d thread%s: %.0f samples/s = %.1f GFLOP/s = %.2f of the layer GEMM rate\n",
        batch, t, t == 1 ? "" : "s", rate, achieved, achieved / floor);
    if (threads == 1) break;
  }
  return kExitOk;
}

struct Benchmark {
  const char* name;
  const char* summary;
  CommandFn run;
};

constexpr Benchmark kBenchmarks[] = {
    {"train", "training samples/s against the Eigen GEMM rate", BenchTrain},
    {"sim", "simulated rounds/s and peak memory against the GEMM and memory-bandwidth floors", BenchSim},
    {"transport", "update exchange between two Transports against raw loopback TCP and the AEAD rate",
     BenchTransport},
    {"torchscript", "murmur's TorchScript learner against a plain LibTorch loop on the same module",
     BenchTorchScript},
};

void ListBenchmarks(std::FILE* out) {
  std::fprintf(out, "usage: murmur bench <name> [options]   (murmur bench <name> --help)\n\nbenchmarks:\n");
  for (const Benchmark& b : kBenchmarks) std::fprintf(out, "  %-10s %s\n", b.name, b.summary);
}

}  // namespace

int RunBench(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    ListBenchmarks(stdout);
    return argc < 2 ? kExitUsage : kExitOk;
  }
  for (const Benchmark& b : kBenchmarks) {
    if (std::strcmp(argv[1], b.name) == 0) {
      std::string prog = std::string("murmur bench ") + b.name;
      argv[1] = prog.data();
      return b.run(argc - 1, argv + 1);
    }
  }
  return UsageError(kName,
                    std::string("unknown benchmark '") + argv[1] + "' (murmur bench --help lists them)");
}

MURMUR_COMMAND("bench", "benchmarks measured against their floors (murmur bench --help)", RunBench);

}  // namespace murmur::cli
