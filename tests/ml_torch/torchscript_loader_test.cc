// The TorchScript loader (ml/torch/torch_plugin.h), in every build: how it
// refuses what is not this build's plugin, and, without LibTorch, how it
// says what to install.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <unistd.h>

#include "ml/torch/torch_plugin.h"
#include "ml/torch/torchscript_model.h"

namespace murmur::ml {
namespace {

namespace fs = std::filesystem;

TEST_CASE(
    "torchscript loader: a missing file, a file that is no library, one without the entry, another build's") {
  auto missing = OpenTorchPlugin("/nonexistent/libmurmur_torch.so");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.status().code() == StatusCode::kNotFound);
  CHECK(missing.status().message() == "TorchScript plugin '/nonexistent/libmurmur_torch.so': no such file");

  const fs::path text = fs::temp_directory_path() / ("murmur_not_elf_" + std::to_string(::getpid()) + ".so");
  std::ofstream(text) << "not a shared library\n";
  auto not_elf = OpenTorchPlugin(text.string());
  fs::remove(text);
  REQUIRE_FALSE(not_elf.ok());
  CHECK(not_elf.status().message().starts_with("TorchScript plugin '" + text.string() +
                                               "' cannot be loaded: "));

  auto no_entry = OpenTorchPlugin(MURMUR_TEST_NOT_A_PLUGIN);
  REQUIRE_FALSE(no_entry.ok());
  CHECK(no_entry.status().message().find(
            "exports no murmur_torch_plugin: it is not a murmur TorchScript plugin") != std::string::npos);

  auto foreign = OpenTorchPlugin(MURMUR_TEST_FOREIGN_PLUGIN);
  REQUIRE_FALSE(foreign.ok());
  CHECK(foreign.status().message().find(
            "is from another build of murmur (murmur 0.0 built elsewhere, this is " +
            std::string(TorchPluginBuildId()) + ")") != std::string::npos);
  CHECK(TorchPluginBuildId().starts_with("murmur "));
}

TEST_CASE("torchscript loader: this build's plugin when it has LibTorch, else what to install") {
  const std::vector<std::int64_t> shape{20};
#if MURMUR_TEST_HAVE_TORCH
  CHECK(TorchScriptAvailable());
  auto plugin = TorchPluginInstance();
  REQUIRE_MESSAGE(plugin.ok(), plugin.status().ToString());
  CHECK(std::string_view((*plugin)->build) == TorchPluginBuildId());
  // The plugin answers: a missing model file is named.
  auto model = LoadTorchScriptModel("torchscript:/nonexistent/model.pt", shape, 10);
  REQUIRE_FALSE(model.ok());
  CHECK(model.status().message().find("/nonexistent/model.pt") != std::string::npos);
#else
  CHECK_FALSE(TorchScriptAvailable());
  auto model = LoadTorchScriptModel("torchscript:model.pt", shape, 10);
  REQUIRE_FALSE(model.ok());
  CHECK(model.status().message().starts_with(
      "model spec 'torchscript:model.pt': murmur was built without LibTorch, so it cannot load TorchScript "
      "models"));
  CHECK(model.status().message().find("apt-get install libtorch-dev") != std::string::npos);
  CHECK(CheckTorchScriptModel("torchscript:model.pt").message() == model.status().message());
#endif
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

}  // namespace
}  // namespace murmur::ml
