// murmur bench torchscript: murmur's TorchScript learner (ml::Trainer with
// SGD over a TorchScript model, what a simulated node runs) against a plain
// LibTorch training loop over the same module, batch and thread count
// (ml/torch/libtorch_loop.h), measured in one run, with the ratio.
#include <cxxopts.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "apps/murmur/bench.h"
#include "apps/murmur/command.h"
#include "core/param_vector.h"
#include "engine/model_factory.h"
#include "ml/optimizer.h"
#include "ml/synthetic.h"
#include "ml/torch/libtorch_loop.h"
#include "ml/trainer.h"

namespace murmur::cli {
namespace {

constexpr const char* kName = "bench torchscript";

Result<std::vector<std::int64_t>> ParseShape(const std::string& text) {
  std::vector<std::int64_t> shape;
  std::size_t at = 0;
  while (at <= text.size()) {
    std::size_t comma = text.find(',', at);
    std::string field = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    char* end = nullptr;
    long long v = std::strtoll(field.c_str(), &end, 10);
    if (field.empty() || *end != '\0' || v < 1 || v > 65536)
      return Status::InvalidArgument("--shape '" + text + "': '" + field + "' is not a size in [1, 65536]");
    shape.push_back(v);
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return shape;
}

// Samples per second of ml::Trainer with SGD (one thread, no pool).
double MurmurRate(const ml::Model& model, const ml::Dataset& data, int batch, double lr, double seconds) {
  ParamVector params(model.layout());
  Rng init(1, 0, RngPurpose::kInit);
  model.InitParams(params, init);
  ml::Sgd sgd(params.size(), ml::SgdOptions{});
  ml::Trainer trainer(model, sgd, ml::LrSchedule(ml::ScheduleOptions{ml::ScheduleKind::kConstant, lr}),
                      ml::TrainerOptions{batch, true, 1, 0}, nullptr);
  std::vector<ml::SampleIndex> all = ml::AllIndices(data);
  trainer.RunEpoch(params, data, all, 0);  // warm-up, as the plain loop's
  auto start = std::chrono::steady_clock::now();
  std::int64_t samples = 0;
  for (int e = 1; SecondsSince(start) < seconds; ++e)
    samples += trainer.RunEpoch(params, data, all, e).samples;
  return static_cast<double>(samples) / SecondsSince(start);
}

}  // namespace

int BenchTorchScript(int argc, char** argv) {
  cxxopts::Options options("murmur bench torchscript",
                           "murmur's TorchScript learner against a plain LibTorch loop on the same module.");
  // clang-format off
  options.add_options()
    ("model", "torchscript:FILE.pt", cxxopts::value<std::string>())
    ("shape", "sample shape the module takes, outermost first", cxxopts::value<std::string>()->default_value("1,28,28"))
    ("classes", "classes of the module's logits", cxxopts::value<int>()->default_value("10"))
    ("batch", "mini-batch size", cxxopts::value<int>()->default_value("32"))
    ("seconds", "seconds per measurement", cxxopts::value<double>()->default_value("3"))
    ("repeats", "alternating pairs of measurements", cxxopts::value<int>()->default_value("3"))
    ("h,help", "show this help");
  // clang-format on
  std::string spec, shape_text;
  int classes, batch, repeats;
  double seconds;
  try {
    auto args = options.parse(argc, argv);
    if (!args.unmatched().empty())
      return UsageError(kName, "unexpected argument '" + args.unmatched()[0] + "'");
    if (args.count("help")) {
      std::printf("%s\n", options.help().c_str());
      return kExitOk;
    }
    if (!args.count("model")) return UsageError(kName, "--model torchscript:FILE.pt is required");
    spec = args["model"].as<std::string>();
    shape_text = args["shape"].as<std::string>();
    classes = args["classes"].as<int>();
    batch = args["batch"].as<int>();
    seconds = args["seconds"].as<double>();
    repeats = args["repeats"].as<int>();
  } catch (const cxxopts::exceptions::exception& e) {
    return UsageError(kName, e.what());
  }
  if (batch < 1 || batch > 65536) return UsageError(kName, "--batch outside [1, 65536]");
  if (classes < 2 || classes > 65536) return UsageError(kName, "--classes outside [2, 65536]");
  if (!(seconds > 0 && seconds <= 600)) return UsageError(kName, "--seconds outside (0, 600]");
  if (repeats < 1 || repeats > 100) return UsageError(kName, "--repeats outside [1, 100]");
  auto shape = ParseShape(shape_text);
  if (!shape.ok()) return UsageError(kName, shape.status().message());
  auto model = engine::MakeModel(spec, *shape, classes);
  if (!model.ok()) return Failure(kName, model.status().message());

  ml::BlobsOptions data_options;
  data_options.num_samples = 4096;
  data_options.dim = (*model)->input_dim();
  data_options.num_classes = classes;
  ml::Dataset data = ml::MakeGaussianBlobs(data_options);
  data.shape = *shape;
  const double lr = 0.01;
  std::printf(
      "model %s: %zu parameters and buffers, %.3f MFLOP per training sample; batch %d, 1 thread, SGD\n",
      spec.c_str(), (*model)->layout().total_size(), (*model)->FlopsPerSample() / 1e6, batch);
  // Alternating pairs, so that load from elsewhere on the machine falls on
  // both sides; the median ratio is the result.
  std::vector<double> ratios;
  for (int r = 0; r < repeats; ++r) {
    auto plain = ml::LibTorchLoopRate(spec, data, batch, lr, seconds);
    if (!plain.ok()) return Failure(kName, plain.status().message());
    const double ours = MurmurRate(**model, data, batch, lr, seconds);
    ratios.push_back(ours / *plain);
    std::printf(
        "pair %d: plain LibTorch loop %.0f samples/s, murmur TorchScript learner %.0f samples/s = %.3f x\n",
        r + 1, *plain, ours, ratios.back());
  }
  std::sort(ratios.begin(), ratios.end());
  std::printf(
      "median ratio of murmur's TorchScript learner to the plain LibTorch loop: %.3f (target >= 0.9)\n",
      ratios[ratios.size() / 2]);
  return kExitOk;
}

}  // namespace murmur::cli
