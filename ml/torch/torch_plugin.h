// The TorchScript plugin: the one shared library of murmur that links
// LibTorch (libmurmur_torch.so, built from the files ml/torch/plugin_impl.h
// lists when the build has LibTorch). Programs link only ml/torch's loader
// (torchscript_loader.cc), which opens the plugin with dlopen the first time
// a "torchscript:" model is asked for. So LibTorch costs nothing (start-up
// time, memory) to a process that trains native models: loading it takes
// about 0.6 s and 150 MB, which murmurd's daemons and `murmur` commands
// would otherwise pay at every start (docs/torchscript.md, "The plugin").
//
// Where the loader looks, in order: the file named by the environment
// variable MURMUR_TORCH_PLUGIN (only there, when it is set); the plugin of
// the build tree the program was built in; the installed one,
// <libdir>/murmur/libmurmur_torch.so. A plugin answers with the build id it
// was made with (version and build directory), and one from another build
// is refused: the plugin and the programs share murmur's C++ types.
//
// The plugin carries its own copy of the ml and core code it uses, hidden
// (only murmur_torch_plugin is exported), and is never unloaded: models it
// made keep their code. Functions of the table never throw.
//
// Thread-safety: OpenTorchPlugin may be called from any thread; the table
// it returns is immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "ml/dataset.h"
#include "ml/model.h"

namespace murmur::ml {

// What the plugin exports: its build id and its three entry points (see
// ml/torch/torchscript_model.h and ml/torch/libtorch_loop.h).
struct TorchPlugin {
  const char* build;
  Result<std::unique_ptr<Model>> (*load)(std::string_view spec, std::span<const std::int64_t> sample_shape,
                                         int num_classes);
  Status (*check)(std::string_view spec);
  Result<double> (*loop_rate)(std::string_view spec, const Dataset& data, int batch, double lr,
                              double seconds);
};

// The exported symbol: a function returning the plugin's table.
inline constexpr const char* kTorchPluginSymbol = "murmur_torch_plugin";
using TorchPluginEntry = const TorchPlugin* (*)();

// The id that a plugin must answer with to be used by this program.
std::string_view TorchPluginBuildId();

// Opens the plugin at `path` (no caching: the loader caches its one plugin).
// Errors name the path: NotFound when there is no file, FailedPrecondition
// when dlopen fails (with its reason), when the file exports no
// murmur_torch_plugin, or when its build id differs from this program's.
Result<const TorchPlugin*> OpenTorchPlugin(const std::string& path);

// The plugin this program uses, opened once (the search above), or why there
// is none: murmur built without LibTorch (what to install), or no plugin
// where it should be.
Result<const TorchPlugin*> TorchPluginInstance();

}  // namespace murmur::ml
