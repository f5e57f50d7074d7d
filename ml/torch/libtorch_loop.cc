// The plain LibTorch training loop of ml/torch/libtorch_loop.h, inside the
// plugin (ml/torch/plugin_impl.h).
#include <algorithm>
#include <chrono>
#include <vector>

#include "ml/torch/plugin_impl.h"
#include "ml/torch/torchscript_model.h"

namespace murmur::ml::plugin {

Result<double> LoopRate(std::string_view spec, const Dataset& data, int batch, double lr, double seconds) {
  MURMUR_CHECK(batch >= 1 && data.num_samples > 0);
  MURMUR_ASSIGN_OR_RETURN(std::string path, TorchScriptPath(spec));
  MURMUR_ASSIGN_OR_RETURN(std::string archive, ReadArchive(path));
  SetUpLibTorchThread();
  MURMUR_ASSIGN_OR_RETURN(torch::jit::Module module, ModuleOf(archive, path));
  std::vector<at::Tensor> params;
  for (const auto& p : module.named_parameters(/*recurse=*/true)) params.push_back(p.value);
  module.train();
  const std::vector<std::int64_t> sample_shape = data.sample_shape();
  const auto b = static_cast<std::size_t>(std::min<std::int64_t>(batch, data.num_samples));
  std::vector<float> x(b * static_cast<std::size_t>(data.dim));
  std::vector<std::int64_t> y(b);
  std::vector<SampleIndex> rows(b);
  std::vector<std::int64_t> shape{static_cast<std::int64_t>(b)};
  shape.insert(shape.end(), sample_shape.begin(), sample_shape.end());
  std::size_t cursor = 0;
  auto step = [&] {
    for (std::size_t i = 0; i < b; ++i)
      rows[i] = static_cast<SampleIndex>((cursor + i) % static_cast<std::size_t>(data.num_samples));
    cursor = (cursor + b) % static_cast<std::size_t>(data.num_samples);
    data.Gather(rows, x.data());
    for (std::size_t i = 0; i < b; ++i) y[i] = data.labels[rows[i]];
    for (at::Tensor& p : params)
      if (p.grad().defined()) p.mutable_grad().zero_();
    at::Tensor loss =
        at::cross_entropy_loss(module.forward({at::from_blob(x.data(), shape, at::kFloat)}).toTensor(),
                               at::from_blob(y.data(), {static_cast<std::int64_t>(b)}, at::kLong));
    loss.backward();
    c10::NoGradGuard no_grad;
    for (at::Tensor& p : params)
      if (p.grad().defined()) p.add_(p.grad(), -lr);
  };
  try {
    const std::size_t warmup = (static_cast<std::size_t>(data.num_samples) + b - 1) / b;
    for (std::size_t i = 0; i < warmup; ++i) step();
    const auto start = std::chrono::steady_clock::now();
    std::int64_t samples = 0;
    double elapsed = 0;
    while (elapsed < seconds) {
      step();
      samples += static_cast<std::int64_t>(b);
      elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    return static_cast<double>(samples) / elapsed;
  } catch (const std::exception& e) {
    return Status::InvalidArgument("'" + path + "': training failed: " + FirstLine(e.what()));
  }
}

}  // namespace murmur::ml::plugin
