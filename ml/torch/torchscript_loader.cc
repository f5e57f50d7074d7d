// ml/torch/torchscript_model.h and ml/torch/libtorch_loop.h in every
// program: each call goes to the TorchScript plugin (ml/torch/torch_plugin.h),
// opened the first time one is made. dlopen is used directly: the loader is
// a few lines and no library murmur uses offers more than a wrapper.
#include <dlfcn.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "ml/torch/libtorch_loop.h"
#include "ml/torch/torch_plugin.h"
#include "ml/torch/torchscript_model.h"

namespace murmur::ml {
namespace {

constexpr const char* kInstalledPlugin = MURMUR_TORCH_PLUGIN_INSTALL_PATH;
#ifdef MURMUR_TORCH_PLUGIN_BUILD_PATH
constexpr const char* kBuiltPlugin = MURMUR_TORCH_PLUGIN_BUILD_PATH;
#else
constexpr const char* kBuiltPlugin = nullptr;  // this build has no LibTorch
#endif

Result<const TorchPlugin*> Search() {
  if (const char* env = std::getenv("MURMUR_TORCH_PLUGIN"); env != nullptr && *env != '\0') {
    auto plugin = OpenTorchPlugin(env);
    if (!plugin.ok()) return plugin.status().WithContext("environment variable MURMUR_TORCH_PLUGIN");
    return plugin;
  }
  std::vector<std::string> tried;
  for (const char* path : {kBuiltPlugin, kInstalledPlugin}) {
    if (path == nullptr) continue;
    auto plugin = OpenTorchPlugin(path);
    if (plugin.status().code() != StatusCode::kNotFound) return plugin;
    tried.push_back(path);
  }
  if (kBuiltPlugin == nullptr)
    return Status::FailedPrecondition(
        "murmur was built without LibTorch, so it cannot load TorchScript models, and no plugin is installed "
        "at " +
        std::string(kInstalledPlugin) +
        ": install LibTorch (apt-get install libtorch-dev) and rebuild murmur with cmake -DMURMUR_TORCH=ON, "
        "or "
        "set MURMUR_TORCH_PLUGIN to the libmurmur_torch.so of this build");
  return Status::FailedPrecondition(
      "the TorchScript plugin of this murmur is missing (looked at " + tried[0] + " and " + tried[1] +
      "): rebuild murmur, or set MURMUR_TORCH_PLUGIN to its libmurmur_torch.so");
}

}  // namespace

std::string_view TorchPluginBuildId() { return MURMUR_TORCH_BUILD_ID; }

Result<const TorchPlugin*> OpenTorchPlugin(const std::string& path) {
  const std::string where = "TorchScript plugin '" + path + "'";
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return Status::NotFound(where + ": no such file");
  // RTLD_LOCAL: LibTorch's symbols stay out of the program's namespace.
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    return Status::FailedPrecondition(where + " cannot be loaded: " + (why ? why : "dlopen failed"));
  }
  // Never dlclose'd once used: the models it makes run its code.
  auto entry = reinterpret_cast<TorchPluginEntry>(::dlsym(handle, kTorchPluginSymbol));
  if (entry == nullptr) {
    ::dlclose(handle);
    return Status::FailedPrecondition(where + " exports no " + std::string(kTorchPluginSymbol) +
                                      ": it is not a murmur TorchScript plugin");
  }
  const TorchPlugin* plugin = entry();
  if (plugin == nullptr || plugin->build == nullptr || TorchPluginBuildId() != plugin->build) {
    const std::string theirs = plugin && plugin->build ? plugin->build : "(none)";
    ::dlclose(handle);
    return Status::FailedPrecondition(where + " is from another build of murmur (" + theirs + ", this is " +
                                      std::string(TorchPluginBuildId()) +
                                      "): use the libmurmur_torch.so built with this program");
  }
  return plugin;
}

Result<const TorchPlugin*> TorchPluginInstance() {
  static const Result<const TorchPlugin*> plugin = Search();  // thread-safe initialization
  return plugin;
}

bool TorchScriptAvailable() { return TorchPluginInstance().ok(); }

namespace {

// The plugin, or why there is none for the model of `spec`.
Result<const TorchPlugin*> Instance(std::string_view spec) {
  auto plugin = TorchPluginInstance();
  if (!plugin.ok()) return plugin.status().WithContext("model spec '" + std::string(spec) + "'");
  return plugin;
}

}  // namespace

Result<std::unique_ptr<Model>> LoadTorchScriptModel(std::string_view spec,
                                                    std::span<const std::int64_t> sample_shape,
                                                    int num_classes) {
  MURMUR_RETURN_IF_ERROR(TorchScriptPath(spec).status());
  MURMUR_ASSIGN_OR_RETURN(const TorchPlugin* plugin, Instance(spec));
  return plugin->load(spec, sample_shape, num_classes);
}

Status CheckTorchScriptModel(std::string_view spec) {
  MURMUR_RETURN_IF_ERROR(TorchScriptPath(spec).status());
  MURMUR_ASSIGN_OR_RETURN(const TorchPlugin* plugin, Instance(spec));
  return plugin->check(spec);
}

Result<double> LibTorchLoopRate(std::string_view spec, const Dataset& data, int batch, double lr,
                                double seconds) {
  MURMUR_RETURN_IF_ERROR(TorchScriptPath(spec).status());
  MURMUR_ASSIGN_OR_RETURN(const TorchPlugin* plugin, Instance(spec));
  return plugin->loop_rate(spec, data, batch, lr, seconds);
}

}  // namespace murmur::ml
