#include <ATen/Parallel.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "ml/torch/plugin_impl.h"
#include "ml/torch/torchscript_model.h"

namespace murmur::ml::plugin {

void SetUpLibTorchThread() {
  static std::once_flag interop;
  std::call_once(interop, [] {
    try {
      at::set_num_interop_threads(1);
    } catch (const std::exception&) {
      // Already started by the embedding program: its choice stands.
    }
  });
  thread_local bool done = false;
  if (!done) {
    try {
      at::set_num_threads(1);
    } catch (const std::exception&) {
      // LibTorch's native pool takes the setting once per process: made already.
    }
    done = true;
  }
}

std::string FirstLine(const char* what) {
  std::string s(what);
  std::size_t nl = s.find('\n');
  std::string first = nl == std::string::npos ? s : s.substr(0, nl);
  // The TorchScript interpreter's errors open with a banner and a traceback;
  // what went wrong is on their last line ("RuntimeError: ...").
  if (first.rfind("The following operation failed in the TorchScript interpreter", 0) == 0) {
    while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
    const std::size_t last = s.rfind('\n');
    if (last != std::string::npos) return s.substr(last + 1);
  }
  return first;
}

Result<std::string> ReadArchive(const std::string& path) {
  std::error_code ec;
  const std::uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return Status::NotFound("TorchScript model '" + path + "': " + ec.message());
  if (size > kMaxTorchScriptFileBytes)
    return Status::InvalidArgument("TorchScript model '" + path + "' is " + std::to_string(size) +
                                   " bytes, over the limit of " + std::to_string(kMaxTorchScriptFileBytes));
  std::ifstream in(path, std::ios::binary);
  std::string bytes(static_cast<std::size_t>(size), '\0');
  if (!in.read(bytes.data(), static_cast<std::streamsize>(size)))
    return Status::NotFound("TorchScript model '" + path + "': cannot be read");
  return bytes;
}

Result<torch::jit::Module> ModuleOf(const std::string& archive, const std::string& path) {
  try {
    std::istringstream in(archive);
    return torch::jit::load(in, at::kCPU);
  } catch (const std::exception& e) {
    return Status::InvalidArgument(
        "'" + path + "' is not a TorchScript archive (save one with torch.jit.script(model).save(FILE)): " +
        FirstLine(e.what()));
  }
}

}  // namespace murmur::ml::plugin
