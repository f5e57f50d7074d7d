// The TorchScript plugin's own side (ml/torch/torch_plugin.h): what its
// table points at, and the LibTorch helpers its files share. Only the
// plugin's files include this header, and with it LibTorch's (they are slow
// to compile and carry their own warnings: CMake includes them as SYSTEM).
//
//   torchscript_model.cc   TorchScriptModel, Load and Check
//   libtorch_loop.cc       LoopRate, the plain LibTorch loop of `murmur bench torchscript`
//   libtorch_util.cc       the helpers below
//   torch_plugin_entry.cc  the exported table; each entry catches what LibTorch throws
//
// Thread-safety: as ml/torch/torchscript_model.h and ml/torch/libtorch_loop.h.
#pragma once

#include <torch/script.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "ml/dataset.h"
#include "ml/model.h"

namespace murmur::ml::plugin {

// The entries of the table (ml/torch/torchscript_model.h: LoadTorchScriptModel,
// CheckTorchScriptModel; ml/torch/libtorch_loop.h: LibTorchLoopRate). They may throw.
Result<std::unique_ptr<Model>> Load(std::string_view spec, std::span<const std::int64_t> sample_shape,
                                    int num_classes);
Status Check(std::string_view spec);
Result<double> LoopRate(std::string_view spec, const Dataset& data, int batch, double lr, double seconds);

// Once per process: one inter-op thread; once per calling thread: one
// intra-op thread (with OpenMP the setting is per thread).
void SetUpLibTorchThread();
// What an exception says in one line: its first (LibTorch's carry stack
// traces), or the last of a TorchScript interpreter error, which names the
// failure after a traceback.
std::string FirstLine(const char* what);
// The bytes of the model file at `path`, at most kMaxTorchScriptFileBytes:
// NotFound when it cannot be read, InvalidArgument when it is too large.
Result<std::string> ReadArchive(const std::string& path);
// The module saved in `archive` (the bytes of `path`), or InvalidArgument
// "'PATH' is not a TorchScript archive (...)".
Result<torch::jit::Module> ModuleOf(const std::string& archive, const std::string& path);

}  // namespace murmur::ml::plugin
