// ml/torch/torchscript_model.h in a build without LibTorch (MURMUR_TORCH=OFF,
// or AUTO where find_package(Torch) found nothing): every load says so, and
// how to get a build that has it.
#include <string>

#include "ml/torch/libtorch_loop.h"
#include "ml/torch/torchscript_model.h"

namespace murmur::ml {
namespace {

Status Unavailable(std::string_view spec) {
  return Status::FailedPrecondition(
      "model spec '" + std::string(spec) +
      "': murmur was built without LibTorch, so it cannot load TorchScript models; install it "
      "(apt-get install libtorch-dev) and rebuild murmur with cmake -DMURMUR_TORCH=ON");
}

}  // namespace

bool TorchScriptAvailable() { return false; }

Result<std::unique_ptr<Model>> LoadTorchScriptModel(std::string_view spec, std::span<const std::int64_t>,
                                                    int) {
  MURMUR_RETURN_IF_ERROR(TorchScriptPath(spec).status());
  return Unavailable(spec);
}

Status CheckTorchScriptModel(std::string_view spec) {
  MURMUR_RETURN_IF_ERROR(TorchScriptPath(spec).status());
  return Unavailable(spec);
}

Result<double> LibTorchLoopRate(std::string_view spec, const Dataset&, int, double, double) {
  MURMUR_RETURN_IF_ERROR(TorchScriptPath(spec).status());
  return Unavailable(spec);
}

}  // namespace murmur::ml
