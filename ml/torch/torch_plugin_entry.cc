// The TorchScript plugin's one exported symbol (ml/torch/torch_plugin.h):
// its table, whose entries turn anything LibTorch throws into a Status.
#include <exception>
#include <string>

#include "ml/torch/plugin_impl.h"
#include "ml/torch/torch_plugin.h"

namespace murmur::ml::plugin {
namespace {

// fn(), or InvalidArgument naming `spec` when it throws.
template <typename Fn>
auto Guarded(std::string_view spec, Fn fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return Status::InvalidArgument("model spec '" + std::string(spec) + "': " + FirstLine(e.what()));
  }
}

Result<std::unique_ptr<Model>> GuardedLoad(std::string_view spec, std::span<const std::int64_t> sample_shape,
                                           int num_classes) {
  return Guarded(spec, [&] { return Load(spec, sample_shape, num_classes); });
}

Status GuardedCheck(std::string_view spec) {
  return Guarded(spec, [&] { return Check(spec); });
}

Result<double> GuardedLoopRate(std::string_view spec, const Dataset& data, int batch, double lr,
                               double seconds) {
  return Guarded(spec, [&] { return LoopRate(spec, data, batch, lr, seconds); });
}

constexpr TorchPlugin kPlugin{MURMUR_TORCH_BUILD_ID, &GuardedLoad, &GuardedCheck, &GuardedLoopRate};

}  // namespace
}  // namespace murmur::ml::plugin

extern "C" __attribute__((visibility("default"))) const murmur::ml::TorchPlugin* murmur_torch_plugin() {
  return &murmur::ml::plugin::kPlugin;
}
