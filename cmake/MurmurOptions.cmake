# Compiler flags shared by every murmur target (applied through murmur_options).
add_library(murmur_options INTERFACE)
target_compile_options(murmur_options INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
  -Wcast-align -Woverloaded-virtual -Wimplicit-fallthrough>)
# No floating-point contraction anywhere: GCC's default for C++ (even with
# -std=c++20) fuses a * b + c into one fused multiply-add wherever the target
# has FMA, so a -march=native build, a portable build (no FMA in its x86-64
# baseline) and an aarch64 build rounded the same expression differently.
# Where murmur wants a fused multiply-add it writes std::fma or an FMA
# intrinsic (core/gemm.h, core/reduce.h, ml/exp.h), the same on every
# machine (docs/simulator.md, "Same bits on every machine").
target_compile_options(murmur_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-ffp-contract=off>)
# Eigen's "fast math" (on by default) takes a float vector's square root as
# an approximate reciprocal square root (rsqrtps, rsqrt14ps) refined by one
# Newton step: not the correctly rounded root, different at each vector
# width, and rsqrtps's approximation is the CPU maker's own (Intel's and
# AMD's differ). Adam's update takes such roots, so it is off everywhere.
target_compile_definitions(murmur_options INTERFACE EIGEN_FAST_MATH=0)
# Square roots set no errno (murmur never reads errno after a math
# function), so that loops of them vectorize (sqrtps: correctly rounded,
# the same bits as the scalar sqrtss); results are unchanged.
target_compile_options(murmur_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-fno-math-errno>)
# GCC 12's AVX-512 intrinsic headers trip -Wmaybe-uninitialized (and, with
# the sanitizers, -Wuninitialized) on their own _mm512_undefined_* temporaries
# (GCC bug 105593) whenever Eigen vectorizes with -march=native on an AVX-512
# machine. The warning says nothing about murmur's code, and a pragma would
# have to precede the first Eigen include of every file, so it is off for GCC 12.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(murmur_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-Wno-maybe-uninitialized -Wno-uninitialized>)
endif()
if(MURMUR_WERROR)
  target_compile_options(murmur_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
if(MURMUR_NATIVE)
  include(CheckCXXCompilerFlag)
  check_cxx_compiler_flag(-march=native MURMUR_HAS_MARCH_NATIVE)
  if(MURMUR_HAS_MARCH_NATIVE)
    target_compile_options(murmur_options INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-march=native>)
  endif()
endif()
if(MURMUR_SANITIZE)
  target_compile_options(murmur_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined>)
  target_link_options(murmur_options INTERFACE -fsanitize=address,undefined)
endif()
