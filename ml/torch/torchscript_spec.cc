// The parts of ml/torch/torchscript_model.h that need no LibTorch, built in
// every configuration.
#include <string>

#include "ml/torch/torchscript_model.h"

namespace murmur::ml {

bool IsTorchScriptSpec(std::string_view spec) { return spec.starts_with(kTorchScriptPrefix); }

Result<std::string> TorchScriptPath(std::string_view spec) {
  if (!IsTorchScriptSpec(spec))
    return Status::InvalidArgument("model spec '" + std::string(spec) + "' is not 'torchscript:FILE.pt'");
  std::string path(spec.substr(kTorchScriptPrefix.size()));
  if (path.empty())
    return Status::InvalidArgument("model spec 'torchscript:' names no file (torchscript:FILE.pt)");
  return path;
}

}  // namespace murmur::ml
