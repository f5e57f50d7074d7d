// murmur train: centralized training of one model on one dataset, the
// baseline that every decentralized run is compared against.
#include <cxxopts.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include "apps/murmur/command.h"
#include "apps/murmur/progress.h"
#include "core/rng.h"
#include "core/thread_pool.h"
#include "engine/model_factory.h"
#include "ml/dataset_spec.h"
#include "ml/idx.h"
#include "ml/optimizer.h"
#include "ml/schedule.h"
#include "ml/text.h"
#include "ml/trainer.h"

namespace murmur::cli {
namespace {

constexpr const char* kName = "train";

// The training and test data (ml/dataset_spec.h: CSV without a test file
// holds out 20% by a seeded permutation), and the samples of each.
struct Data {
  ml::TrainTest tt;
  std::vector<ml::SampleIndex> train_idx, test_idx;
};

// Returns the data, or a Status; `usage` is set when the spec itself is bad.
Result<Data> LoadData(const std::string& spec, const std::string& data_dir, const std::string& test_csv,
                      std::uint64_t seed, bool* usage) {
  const bool csv = spec.rfind("csv:", 0) == 0;
  const bool numpy = spec.rfind("npz:", 0) == 0 || spec.rfind("npy:", 0) == 0;
  if (!csv && !numpy && spec != "fashion-mnist" && spec.rfind("synthetic:", 0) != 0) *usage = true;
  if (!csv && !test_csv.empty()) {
    *usage = true;
    return Status::InvalidArgument(
        "--test-csv is the test set of --dataset csv:PATH; --dataset '" + spec +
        "' brings its own (npz:FILE:TEST, npy:X:Y:X_TEST:Y_TEST, text:T:FILE:TEST)");
  }
  Data d;
  MURMUR_ASSIGN_OR_RETURN(
      d.tt, ml::LoadDatasetSpec(csv && !test_csv.empty() ? spec + ":" + test_csv : spec, data_dir, seed));
  d.train_idx = ml::AllIndices(d.tt.train);
  d.test_idx = ml::AllIndices(d.tt.test);
  return d;
}

}  // namespace

int RunTrain(int argc, char** argv) {
  cxxopts::Options options("murmur train", "Train one model centrally and report its test accuracy.");
  // clang-format off
  options.add_options()
    ("model", "softmax, mlp:<width>,..., cnn:<layers>, cnn-fedavg or lenet5", cxxopts::value<std::string>()->default_value("mlp:256,128"))
    ("dataset", "fashion-mnist, csv:PATH, npz:FILE.npz[:TEST.npz], npy:X:Y:X_TEST:Y_TEST, text:T:FILE[:TEST], synthetic:blobs or synthetic:teacher",
     cxxopts::value<std::string>()->default_value("fashion-mnist"))
    ("data-dir", "directory of the Fashion-MNIST files", cxxopts::value<std::string>()->default_value(ml::kFashionMnistDir))
    ("test-csv", "test set for --dataset csv:PATH (default: hold out 20%)", cxxopts::value<std::string>()->default_value(""))
    ("epochs", "passes over the training set", cxxopts::value<int>()->default_value("10"))
    ("batch", "mini-batch size", cxxopts::value<int>()->default_value("64"))
    ("optimizer", "sgd, momentum, nesterov, adam or adamw (decoupled weight decay, as murmur sim's adamw)", cxxopts::value<std::string>()->default_value("adam"))
    ("lr", "peak learning rate (default: 0.002 for adam and adamw, 0.05 otherwise)", cxxopts::value<double>())
    ("momentum", "momentum for momentum and nesterov", cxxopts::value<double>()->default_value("0.9"))
    ("schedule", "constant, step or cosine", cxxopts::value<std::string>()->default_value("cosine"))
    ("step-epochs", "for --schedule step: epochs between decays by 10x", cxxopts::value<int>()->default_value("5"))
    ("warmup", "linear warm-up over this many steps", cxxopts::value<int>()->default_value("0"))
    ("weight-decay", "weight decay (L2 added to the gradient; adamw: decoupled, x -= lr wd x)", cxxopts::value<double>()->default_value("0"))
    ("seed", "random seed (initialization and batch order)", cxxopts::value<std::uint64_t>()->default_value("1"))
    ("threads", "threads per batch (results do not depend on it)",
     cxxopts::value<int>()->default_value(std::to_string(HardwareThreads())))
    ("h,help", "show this help");
  // clang-format on
  cxxopts::ParseResult args;
  if (auto stop = ParseFlags(options, argc, argv, kName, &args)) return *stop;
  int epochs, batch, threads, warmup, step_epochs;
  double momentum, weight_decay;
  std::string model_spec, optimizer_name, schedule_name;
  std::uint64_t seed;
  std::optional<double> lr_flag;
  try {
    epochs = args["epochs"].as<int>();
    batch = args["batch"].as<int>();
    threads = args["threads"].as<int>();
    warmup = args["warmup"].as<int>();
    step_epochs = args["step-epochs"].as<int>();
    momentum = args["momentum"].as<double>();
    weight_decay = args["weight-decay"].as<double>();
    model_spec = args["model"].as<std::string>();
    optimizer_name = args["optimizer"].as<std::string>();
    schedule_name = args["schedule"].as<std::string>();
    seed = args["seed"].as<std::uint64_t>();
    if (args.count("lr")) lr_flag = args["lr"].as<double>();
  } catch (const cxxopts::exceptions::exception& e) {
    return UsageError(kName, e.what());
  }
  if (epochs < 1) return UsageError(kName, "--epochs " + std::to_string(epochs) + " must be at least 1");
  if (batch < 1) return UsageError(kName, "--batch " + std::to_string(batch) + " must be at least 1");
  if (threads < 1 || threads > 1024)
    return UsageError(kName, "--threads " + std::to_string(threads) + " outside [1, 1024]");
  if (warmup < 0) return UsageError(kName, "--warmup " + std::to_string(warmup) + " must be >= 0");
  if (step_epochs < 1) return UsageError(kName, "--step-epochs must be at least 1");
  double lr = lr_flag.value_or(optimizer_name == "adam" || optimizer_name == "adamw" ? 2e-3 : 0.05);
  if (!(lr > 0 && lr < 1e3)) return UsageError(kName, "--lr " + std::to_string(lr) + " outside (0, 1000)");
  Result<ml::ScheduleKind> kind = ml::ParseScheduleKind(schedule_name);
  if (!kind.ok()) return UsageError(kName, kind.status().message());
  // Check the model spec and optimizer before reading the data.
  if (Status probe = engine::CheckModelSpec(model_spec); !probe.ok())
    return UsageError(kName, probe.message());
  if (auto probe = ml::MakeOptimizer(optimizer_name, 1, momentum, weight_decay); !probe.ok())
    return UsageError(kName, probe.status().message());

  bool usage = false;
  Result<Data> loaded = LoadData(args["dataset"].as<std::string>(), args["data-dir"].as<std::string>(),
                                 args["test-csv"].as<std::string>(), seed, &usage);
  if (!loaded.ok())
    return usage ? UsageError(kName, loaded.status().message()) : Failure(kName, loaded.status().message());
  Data& data = *loaded;
  auto model = engine::MakeModel(model_spec, data.tt.train.sample_shape(), data.tt.train.num_classes);
  if (!model.ok()) return Failure(kName, model.status().message());
  if (Status fits = engine::CheckModelForData(**model, data.tt.train); !fits.ok())
    return Failure(kName, fits.message());
  auto optimizer = ml::MakeOptimizer(optimizer_name, (*model)->layout().total_size(), momentum, weight_decay);
  if (!optimizer.ok()) return Failure(kName, optimizer.status().message());

  ThreadPool pool(threads);
  ml::TrainerOptions topts;
  topts.batch_size = batch;
  topts.seed = seed;
  ml::ScheduleOptions sopts;
  sopts.kind = *kind;
  sopts.lr = lr;
  ml::Trainer probe_trainer(**model, **optimizer, ml::LrSchedule(sopts), topts);
  const std::int64_t per_epoch =
      probe_trainer.BatchesPerEpoch(static_cast<std::int64_t>(data.train_idx.size()));
  sopts.total_steps = per_epoch * epochs;
  sopts.warmup_steps = warmup;
  sopts.step_size = per_epoch * step_epochs;
  ml::Trainer trainer(**model, **optimizer, ml::LrSchedule(sopts), topts, &pool);

  ParamVector params((*model)->layout());
  Rng init(seed, 0, RngPurpose::kInit);
  (*model)->InitParams(params, init);
  std::printf("model %s (%zu parameters, %.3g MFLOP per sample)  dataset %s (%zu train, %zu test)\n",
              (*model)->spec().c_str(), params.size(), (*model)->FlopsPerSample() / 1e6,
              data.tt.train.name.c_str(), data.train_idx.size(), data.test_idx.size());
  std::printf("optimizer %s lr %g schedule %s batch %d threads %d seed %llu\n", optimizer_name.c_str(), lr,
              schedule_name.c_str(), batch, threads, static_cast<unsigned long long>(seed));
  std::fflush(stdout);

  ProgressBar bar("train", static_cast<std::uint64_t>(per_epoch * epochs), 5);
  double train_seconds = 0;
  std::int64_t samples = 0;
  const bool text = ml::IsTextDatasetSpec(args["dataset"].as<std::string>());
  ml::Evaluation ev;
  for (int e = 0; e < epochs; ++e) {
    auto start = std::chrono::steady_clock::now();
    ml::EpochStats st =
        trainer.RunEpoch(params, data.tt.train, data.train_idx, e, [&](std::int64_t k, double loss) {
          char status[64];
          std::snprintf(status, sizeof(status), "epoch %d loss %.4f", e + 1, loss);
          bar.Update(static_cast<std::uint64_t>(e * per_epoch + k + 1), status);
        });
    train_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    samples += st.samples;
    ev = (*model)->Evaluate(params, data.tt.test, data.test_idx, trainer.workspace(), &pool);
    if (text)
      std::printf("epoch %d/%d  train loss %.4f  test loss %.4f  test perplexity %.3f  lr %.3g\n", e + 1,
                  epochs, st.mean_loss, ev.loss, std::exp(ev.loss), trainer.last_lr());
    else
      std::printf("epoch %d/%d  train loss %.4f  test accuracy %.4f  test loss %.4f  lr %.3g\n", e + 1,
                  epochs, st.mean_loss, ev.accuracy, ev.loss, trainer.last_lr());
    std::fflush(stdout);
  }
  bar.Finish();
  if (text)  // a language model: nats per byte and perplexity, exp(loss)
    std::printf("test loss %.4f  test perplexity %.3f\n", ev.loss, std::exp(ev.loss));
  else
    std::printf("test accuracy %.4f  test loss %.4f\n", ev.accuracy, ev.loss);
  std::printf("%.0f samples/s (%lld samples in %.1fs of training, %.1f GFLOP/s)\n",
              static_cast<double>(samples) / train_seconds, static_cast<long long>(samples), train_seconds,
              static_cast<double>(samples) * (*model)->FlopsPerSample() / train_seconds / 1e9);
  return kExitOk;
}

MURMUR_COMMAND("train",
               "train a model centrally (softmax, MLP or CNN on Fashion-MNIST, NumPy, CSV or synthetic data)",
               RunTrain);

}  // namespace murmur::cli
