// murmur bench: whole-run benchmarks, each printed next to the floor it is
// measured against. `murmur bench <name>`; add a benchmark by adding a row to
// kBenchmarks.
#include <cxxopts.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "apps/murmur/bench.h"
#include "apps/murmur/command.h"
#include "core/param_vector.h"
#include "core/simd.h"
#include "core/thread_pool.h"
#include "ml/cnn.h"
#include "ml/mlp.h"
#include "ml/model_spec.h"
#include "ml/optimizer.h"
#include "ml/synthetic.h"
#include "ml/trainer.h"

namespace murmur::cli {

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double at = q * static_cast<double>(v.size() - 1);
  const auto lo = static_cast<std::size_t>(at);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (at - static_cast<double>(lo));
}

double Median(const std::vector<double>& v) { return Quantile(v, 0.5); }

namespace {

constexpr const char* kName = "bench";

// Training samples per second of a model with Adam on random data, measured
// as often as asked on the same trainer (set up, and warmed up by one epoch,
// once).
class TrainTimer {
 public:
  TrainTimer(const ml::Model& model, const ml::Dataset& data, int batch, int threads)
      : data_(data),
        params_(model.layout()),
        adam_(params_.size(), ml::AdamOptions{}),
        pool_(threads),
        trainer_(model, adam_, ml::LrSchedule(ml::ScheduleOptions{ml::ScheduleKind::kConstant, 1e-3}),
                 ml::TrainerOptions{batch, true, 1, 0}, &pool_),
        all_(ml::AllIndices(data)) {
    Rng init(1, 0, RngPurpose::kInit);
    model.InitParams(params_, init);
    trainer_.RunEpoch(params_, data_, all_, epoch_++);  // warm-up: workspace, caches
  }

  // Samples per second over whole epochs, for at least `seconds`.
  double Measure(double seconds) {
    auto start = std::chrono::steady_clock::now();
    std::int64_t samples = 0;
    do {
      samples += trainer_.RunEpoch(params_, data_, all_, epoch_++).samples;
    } while (SecondsSince(start) < seconds);
    return static_cast<double>(samples) / SecondsSince(start);
  }

 private:
  const ml::Dataset& data_;
  ParamVector params_;
  ml::Adam adam_;
  ThreadPool pool_;
  ml::Trainer trainer_;
  std::vector<ml::SampleIndex> all_;
  std::int64_t epoch_ = 0;
};

double TrainRate(const ml::Model& model, const ml::Dataset& data, int batch, int threads, double seconds) {
  return TrainTimer(model, data, batch, threads).Measure(seconds);
}

// One matrix product of the network, to be timed alone: its name, the
// FLOPs of one call and per training sample, and the call (which owns its
// operands).
struct Product {
  std::string name;
  double flops_per_call = 0;
  double flops_per_sample = 0;
  std::function<void()> run;
};

MatrixView View(const RowMatrixXf& m) { return MatrixView::RowMajor(m.data(), m.rows(), m.cols()); }

// Every matrix product a training step of `cnn` does, at its shape and with
// the operand transposes of ml/cnn.cc: per layer the forward product, the
// weight gradient and (but for the first layer) the input gradient; per
// sample for a convolution, per chunk of `rows` for a dense layer.
std::vector<Product> CnnProducts(const ml::Cnn& cnn, std::int64_t rows) {
  std::vector<Product> products;
  auto add = [&](std::string name, double flops_per_call, double calls_per_sample,
                 std::function<void()> run) {
    products.push_back({std::move(name), flops_per_call, flops_per_call * calls_per_sample, std::move(run)});
  };
  auto dims = [](const char* what, std::int64_t m, std::int64_t k, std::int64_t n) {
    std::ostringstream os;
    os << what << ' ' << m << 'x' << k << 'x' << n;
    return os.str();
  };
  struct Operands {
    RowMatrixXf w, x, y, dy, dw, dx;
  };
  for (std::size_t l = 0; l < cnn.stages().size(); ++l) {
    const ml::Cnn::Stage& st = cnn.stages()[l];
    const bool first = l == 0;
    if (st.layer.kind == ml::CnnLayerKind::kConv) {
      // y (out x positions) = W (out x patch) cols (patch x positions).
      const std::int64_t m = st.out.c, k = st.in.c * st.layer.kernel * st.layer.kernel,
                         n = st.out.h * st.out.w;
      auto o = std::make_shared<Operands>(Operands{RowMatrixXf::Random(m, k), RowMatrixXf::Random(k, n),
                                                   RowMatrixXf(m, n), RowMatrixXf::Random(m, n),
                                                   RowMatrixXf::Zero(m, k), RowMatrixXf(k, n)});
      const double flops = 2.0 * static_cast<double>(m * k * n);
      add(dims("conv forward", m, k, n), flops, 1,
          [o] { Gemm(View(o->w), View(o->x), o->y.data(), o->y.cols(), GemmMode::kSet); });
      add(dims("conv weight gradient", m, n, k), flops, 1,
          [o] { Gemm(View(o->dy), View(o->x).T(), o->dw.data(), o->dw.cols(), GemmMode::kAdd); });
      if (!first)
        add(dims("conv input gradient", k, m, n), flops, 1,
            [o] { Gemm(View(o->w).T(), View(o->dy), o->dx.data(), o->dx.cols(), GemmMode::kSet); });
    } else if (st.layer.kind == ml::CnnLayerKind::kDense) {
      // z (rows x out) = a (rows x in) W (in x out).
      const std::int64_t r = rows, i = st.in.size(), n = st.out.size();
      auto o = std::make_shared<Operands>(Operands{RowMatrixXf::Random(i, n), RowMatrixXf::Random(r, i),
                                                   RowMatrixXf(r, n), RowMatrixXf::Random(r, n),
                                                   RowMatrixXf::Zero(i, n), RowMatrixXf(r, i)});
      const double flops = 2.0 * static_cast<double>(r * i * n), per_sample = 1.0 / static_cast<double>(r);
      add(dims("dense forward", r, i, n), flops, per_sample,
          [o] { Gemm(View(o->x), View(o->w), o->y.data(), o->y.cols(), GemmMode::kSet); });
      add(dims("dense weight gradient", i, r, n), flops, per_sample,
          [o] { Gemm(View(o->x).T(), View(o->dy), o->dw.data(), o->dw.cols(), GemmMode::kSet); });
      if (!first)
        add(dims("dense input gradient", r, n, i), flops, per_sample,
            [o] { Gemm(View(o->dy), View(o->w).T(), o->dx.data(), o->dx.cols(), GemmMode::kSet); });
    }
  }
  return products;
}

// FLOP-weighted rate of a set of products whose rates are `rates`: total
// FLOPs over the sum of their times.
double WeightedRate(const std::vector<Product>& products, const std::vector<double>& rates,
                    bool forward_only) {
  double total = 0, time = 0;
  for (std::size_t i = 0; i < products.size(); ++i) {
    if (forward_only && products[i].name.find("forward") == std::string::npos) continue;
    total += products[i].flops_per_sample;
    time += products[i].flops_per_sample / rates[i];
  }
  return total / time;
}

// The convolutional model against its GEMM floor: the time its matrix
// products take alone (time = sum of flops_i / rate_i over every product of
// a training step). The floor and the training rate are measured in turn in
// short rounds: each round times every product for about 10 ms and then one
// epoch of 4 training steps (about 0.1 s), so that the two are measured
// within a fraction of a second of each other and a change in the machine's
// speed (a shared core) moves both. Each round gives a ratio; the result is
// the median over the rounds of `repeats` x `seconds`.
int BenchCnnTrain(const ml::Cnn& cnn, const ml::Dataset& data, int batch, int threads, double seconds,
                  int repeats) {
  const std::int64_t rows = std::min<std::int64_t>(batch, cnn.options().chunk_rows);
  const std::vector<Product> products = CnnProducts(cnn, rows);
  std::vector<int> thread_counts = {1};
  if (threads > 1) thread_counts.push_back(threads);
  std::vector<std::unique_ptr<TrainTimer>> timers;
  for (int t : thread_counts) timers.push_back(std::make_unique<TrainTimer>(cnn, data, batch, t));
  // Calls of each product in about 10 ms.
  std::vector<std::int64_t> calls;
  for (const Product& p : products) {
    const double rate = ProductRate(p.flops_per_call, 0.02, p.run);
    calls.push_back(
        std::max<std::int64_t>(1, static_cast<std::int64_t>(0.01 * rate * 1e9 / p.flops_per_call)));
  }
  std::vector<std::vector<double>> product_rates(products.size());
  std::vector<double> floors, forward_floors, peaks;
  std::vector<std::vector<double>> samples(thread_counts.size()), ratios(thread_counts.size()),
      peak_ratios(thread_counts.size());
  const auto start = std::chrono::steady_clock::now();
  do {
    peaks.push_back(FmaPeak(0.01));
    std::vector<double> rates;
    for (std::size_t i = 0; i < products.size(); ++i) {
      const auto begin = std::chrono::steady_clock::now();
      for (std::int64_t c = 0; c < calls[i]; ++c) products[i].run();
      rates.push_back(products[i].flops_per_call * static_cast<double>(calls[i]) / SecondsSince(begin) / 1e9);
      product_rates[i].push_back(rates.back());
    }
    floors.push_back(WeightedRate(products, rates, false));
    forward_floors.push_back(WeightedRate(products, rates, true));
    for (std::size_t j = 0; j < thread_counts.size(); ++j) {
      samples[j].push_back(timers[j]->Measure(0));  // one epoch
      ratios[j].push_back(samples[j].back() * cnn.FlopsPerSample() / 1e9 /
                          (floors.back() * thread_counts[j]));
      peak_ratios[j].push_back(samples[j].back() * cnn.FlopsPerSample() / 1e9 /
                               (peaks.back() * thread_counts[j]));
    }
  } while (SecondsSince(start) < seconds * repeats);
  const std::size_t rounds = floors.size();
  std::printf("medians of %zu rounds:\n", rounds);
  std::printf("FMA peak of one core (%s, measured in each round): %.1f GFLOP/s (quartiles %.1f-%.1f)\n",
              std::string(SimdName(SupportedSimd())).c_str(), Median(peaks), Quantile(peaks, 0.25),
              Quantile(peaks, 0.75));
  for (std::size_t i = 0; i < products.size(); ++i)
    std::printf("  murmur GEMM, %s: %.1f GFLOP/s\n", products[i].name.c_str(), Median(product_rates[i]));
  std::printf(
      "GEMM floor of this network (every product of a training step on im2col, FLOP-weighted, one thread): "
      "%.1f GFLOP/s (forward products alone: %.1f; rounds' quartiles %.1f-%.1f)\n",
      Median(floors), Median(forward_floors), Quantile(floors, 0.25), Quantile(floors, 0.75));
  for (std::size_t j = 0; j < thread_counts.size(); ++j) {
    const int t = thread_counts[j];
    const double rate = Median(samples[j]);
    std::printf(
        "training batch %d, %d thread%s: %.0f samples/s = %.1f GFLOP/s; of the FMA peak x %d: %.2f "
        "(quartiles %.2f-%.2f); of the GEMM floor x %d: %.2f (quartiles %.2f-%.2f); medians of the rounds, "
        "each measured in turn with its floors\n",
        batch, t, t == 1 ? "" : "s", rate, rate * cnn.FlopsPerSample() / 1e9, t, Median(peak_ratios[j]),
        Quantile(peak_ratios[j], 0.25), Quantile(peak_ratios[j], 0.75), t, Median(ratios[j]),
        Quantile(ratios[j], 0.25), Quantile(ratios[j], 0.75));
  }
  return kExitOk;
}

int BenchTrain(int argc, char** argv) {
  cxxopts::Options options(
      "murmur bench train",
      "Training samples/s of a model against the core's FMA peak and the GEMM rate of its layer sizes.");
  // clang-format off
  options.add_options()
    ("model", "softmax, mlp:<width>,..., cnn:<layers>, cnn-fedavg or lenet5", cxxopts::value<std::string>()->default_value("mlp:256,128"))
    ("batch", "mini-batch size", cxxopts::value<int>()->default_value("64"))
    ("seconds", "seconds per measurement", cxxopts::value<double>()->default_value("3"))
    ("kernels", "the kernel level to run at most (core/simd.h): avx512, avx2 or generic; every level computes the same bits; default: MURMUR_SIMD, else the best this CPU has", cxxopts::value<std::string>()->default_value(""))
    ("repeats", "convolutional models: measure for repeats x seconds, in rounds of the GEMM floor and an epoch of training in turn (the median ratio is the result)", cxxopts::value<int>()->default_value("5"))
    ("threads", "threads for the all-threads runs", cxxopts::value<int>()->default_value(std::to_string(HardwareThreads())))
    ("h,help", "show this help");
  // clang-format on
  std::string spec;
  int batch, threads, repeats;
  double seconds;
  std::string kernels;
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
    repeats = args["repeats"].as<int>();
    kernels = args["kernels"].as<std::string>();
  } catch (const cxxopts::exceptions::exception& e) {
    return UsageError(kName, e.what());
  }
  if (batch < 1) return UsageError(kName, "--batch must be at least 1");
  if (threads < 1 || threads > 1024) return UsageError(kName, "--threads outside [1, 1024]");
  if (!(seconds > 0 && seconds <= 600)) return UsageError(kName, "--seconds outside (0, 600]");
  if (repeats < 1 || repeats > 100) return UsageError(kName, "--repeats outside [1, 100]");
  if (!kernels.empty()) {
    const std::optional<SimdLevel> cap = ParseSimdLevel(kernels);
    if (!cap) return UsageError(kName, "--kernels '" + kernels + "' (expected avx512, avx2 or generic)");
    if (static_cast<int>(*cap) > static_cast<int>(SupportedSimd()))
      return UsageError(kName, "--kernels " + kernels + ": this CPU runs at most " +
                                   std::string(SimdName(SupportedSimd())));
    CapSimd(*cap);
  }
  // Fashion-MNIST's shape, 1 x 28 x 28 (random values: speed does not depend on them).
  const std::int64_t shape[] = {1, 28, 28};
  auto model = ml::MakeModel(spec, shape, 10);
  if (!model.ok()) return UsageError(kName, model.status().message());
  const auto* mlp = dynamic_cast<const ml::Mlp*>(model->get());
  const auto* cnn = dynamic_cast<const ml::Cnn*>(model->get());
  const double flops = (*model)->FlopsPerSample();
  ml::BlobsOptions data_options;
  // A convolutional model's epochs are its rounds' training measurements (4 steps).
  data_options.num_samples = mlp != nullptr ? 8192 : cnn != nullptr ? std::max(4 * batch, 128) : 2048;
  data_options.dim = 784;
  ml::Dataset data = ml::MakeGaussianBlobs(data_options);
  data.shape = {1, 28, 28};

  std::printf("model %s: %zu parameters, %.4f MFLOP per sample (forward + backward matrix products)\n",
              spec.c_str(), (*model)->layout().total_size(), flops / 1e6);
  std::printf("kernels: %s (this CPU: %s)\n", std::string(SimdName(ActiveSimd())).c_str(),
              std::string(SimdName(SupportedSimd())).c_str());
  if (cnn != nullptr) return BenchCnnTrain(*cnn, data, batch, threads, seconds, repeats);
  // The floors: the core's FMA peak, and the first layer's product at the
  // chunk size the model multiplies (its largest GEMM) on murmur's GEMM.
  const double peak = FmaPeak(seconds / 4);
  std::printf("FMA peak of one core (%s): %.1f GFLOP/s\n", std::string(SimdName(SupportedSimd())).c_str(),
              peak);
  std::int64_t rows = std::min<std::int64_t>(batch, mlp != nullptr ? mlp->options().chunk_rows : batch);
  std::int64_t out = mlp != nullptr ? mlp->widths()[1] : 10;
  double gemm1 = GemmRate(rows, 784, out, 1, seconds);
  double gemmn = GemmRate(rows, 784, out, threads, seconds);
  std::printf(
      "murmur GEMM %lldx784x%lld (first layer, one chunk; kernels %s): 1 thread %.1f GFLOP/s = %.2f of the "
      "FMA "
      "peak, %d threads %.1f GFLOP/s\n",
      static_cast<long long>(rows), static_cast<long long>(out), std::string(SimdName(ActiveSimd())).c_str(),
      gemm1, gemm1 / peak, threads, gemmn);
  for (int t : {1, threads}) {
    double rate = TrainRate(**model, data, batch, t, seconds);
    double achieved = rate * flops / 1e9;
    std::printf(
        "training batch %d, %d thread%s: %.0f samples/s = %.1f GFLOP/s = %.2f of the FMA peak x %d (%.2f of "
        "the layer's GEMM rate)\n",
        batch, t, t == 1 ? "" : "s", rate, achieved, achieved / (peak * t), t,
        achieved / (t == 1 ? gemm1 : gemmn));
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
    {"train", "training samples/s against the core's FMA peak and murmur's GEMM", BenchTrain},
    {"sim", "simulated rounds/s and peak memory against the GEMM and memory-bandwidth floors", BenchSim},
    {"transport", "update exchange between two Transports against raw loopback TCP and the AEAD rate",
     BenchTransport},
    {"transfer", "a model file shipped as an artifact to a daemon's store against TCP, AEAD and BLAKE2b",
     BenchTransfer},
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
