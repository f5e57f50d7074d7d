// A TorchScript plugin of another build of murmur: the right entry point,
// another build id (tests/ml_torch/torchscript_loader_test.cc). The table
// is laid out as ml::TorchPlugin (a build id, then three function pointers)
// without including it, so that this library needs nothing of murmur; the
// loader reads only the id before refusing it.
namespace {
struct ForeignTable {
  const char* build;
  void (*entries[3])();
};
constexpr ForeignTable kForeign{"murmur 0.0 built elsewhere", {nullptr, nullptr, nullptr}};
}  // namespace

extern "C" __attribute__((visibility("default"))) const void* murmur_torch_plugin() { return &kForeign; }
