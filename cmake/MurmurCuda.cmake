# Optional CUDA. MURMUR_CUDA=AUTO builds the CUDA sources when nvcc is found,
# ON requires it, OFF never looks. The CPU path never needs nvcc.
set(MURMUR_HAVE_CUDA OFF)
# AUTO leaves CUDA out of cross, sanitizer and fuzzing builds: nvcc targets
# the build machine, and neither sanitizer instruments device code.
if(MURMUR_CUDA STREQUAL "AUTO" AND (CMAKE_CROSSCOMPILING OR MURMUR_SANITIZE OR MURMUR_FUZZ))
  message(STATUS "murmur: CUDA left out of this cross, sanitizer or fuzzing build (MURMUR_CUDA=ON forces it)")
elseif(NOT MURMUR_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 80 90)
    endif()
    enable_language(CUDA)
    # CUDA sources take the C++ standard of the project (CXX_STANDARD 20);
    # CMake before 3.27 does not know nvcc's flag for it.
    if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    find_package(CUDAToolkit REQUIRED)
    set(MURMUR_HAVE_CUDA ON)
    message(STATUS "murmur: CUDA kernels enabled (${CMAKE_CUDA_COMPILER})")
  elseif(MURMUR_CUDA STREQUAL "ON")
    message(FATAL_ERROR "murmur: MURMUR_CUDA=ON but no CUDA compiler was found")
  else()
    message(STATUS "murmur: no CUDA compiler; building the CPU path only")
  endif()
endif()
