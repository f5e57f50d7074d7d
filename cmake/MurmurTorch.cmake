# Optional LibTorch (TorchScript models, ml/torch/). MURMUR_TORCH=AUTO uses it
# when find_package(Torch) finds it (Debian: libtorch-dev), ON requires it,
# OFF never looks. Without it ml/torch/ still builds, and loading a
# "torchscript:" model returns an error that says how to get LibTorch.
set(MURMUR_HAVE_TORCH OFF)
if(NOT MURMUR_TORCH STREQUAL "OFF")
  find_package(Torch QUIET)
  if(Torch_FOUND)
    set(MURMUR_HAVE_TORCH ON)
    message(STATUS "murmur: LibTorch ${Torch_VERSION} found: TorchScript models enabled")
  elseif(MURMUR_TORCH STREQUAL "ON")
    message(FATAL_ERROR "murmur: MURMUR_TORCH=ON but LibTorch was not found (apt-get install libtorch-dev)")
  else()
    message(STATUS "murmur: no LibTorch; TorchScript models are not built (apt-get install libtorch-dev)")
  endif()
endif()
