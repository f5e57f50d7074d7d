// A shared library that is not a TorchScript plugin: it exports no
// murmur_torch_plugin (tests/ml_torch/torchscript_loader_test.cc).
extern "C" __attribute__((visibility("default"))) int murmur_something_else() { return 1; }
