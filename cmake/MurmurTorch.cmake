# Optional LibTorch (TorchScript models, ml/torch/). MURMUR_TORCH=AUTO uses it
# when find_package(Torch) finds it (Debian: libtorch-dev), ON requires it,
# OFF never looks. With it, the plugin libmurmur_torch.so is built (the only
# target that links LibTorch; ml/torch/torch_plugin.h), and every library is
# compiled position-independent, since the plugin links them. Without it
# ml/torch/ still builds, and loading a "torchscript:" model returns an error
# that says how to get LibTorch.
set(MURMUR_HAVE_TORCH OFF)
if(NOT MURMUR_TORCH STREQUAL "OFF")
  find_package(Torch QUIET)
  if(Torch_FOUND)
    set(MURMUR_HAVE_TORCH ON)
    set(CMAKE_POSITION_INDEPENDENT_CODE ON)
    message(STATUS "murmur: LibTorch ${Torch_VERSION} found: TorchScript plugin enabled")
  elseif(MURMUR_TORCH STREQUAL "ON")
    message(FATAL_ERROR "murmur: MURMUR_TORCH=ON but LibTorch was not found (apt-get install libtorch-dev)")
  else()
    message(STATUS "murmur: no LibTorch; the TorchScript plugin is not built (apt-get install libtorch-dev)")
  endif()
endif()
