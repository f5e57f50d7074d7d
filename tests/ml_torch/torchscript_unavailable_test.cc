// The build without LibTorch: ml/torch/torchscript_unavailable.cc, compiled
// into this test whatever the build has, says how to get LibTorch.
#include <doctest/doctest.h>

#include "ml/torch/torchscript_model.h"

namespace murmur::ml {

TEST_CASE("torchscript without LibTorch: loading says how to get it") {
  CHECK(!TorchScriptAvailable());
  const std::vector<std::int64_t> shape{20};
  auto model = LoadTorchScriptModel("torchscript:model.pt", shape, 10);
  REQUIRE(!model.ok());
  CHECK(model.status().message() ==
        "model spec 'torchscript:model.pt': murmur was built without LibTorch, so it cannot load TorchScript "
        "models; install it (apt-get install libtorch-dev) and rebuild murmur with cmake -DMURMUR_TORCH=ON");
  CHECK(CheckTorchScriptModel("torchscript:model.pt").message() == model.status().message());
  // A spec without a file is named as such first.
  CHECK(LoadTorchScriptModel("torchscript:", shape, 10).status().message().find("names no file") !=
        std::string::npos);
}

TEST_CASE("torchscript specs: the prefix and the file") {
  CHECK(IsTorchScriptSpec("torchscript:a.pt"));
  CHECK(!IsTorchScriptSpec("mlp:32"));
  CHECK(TorchScriptPath("torchscript:dir/a.pt").value() == "dir/a.pt");
  CHECK(!TorchScriptPath("mlp:32").ok());
}

}  // namespace murmur::ml
