#include "ml/cpu.h"

namespace murmur::ml {

bool HasAvx512() {
#if defined(__x86_64__)
  static const bool available = [] {
    __builtin_cpu_init();  // in case this runs before libgcc's own constructor
    // GCC's check includes the operating system's XSAVE state for AVX-512.
    return __builtin_cpu_supports("avx512f") != 0;
  }();
  return available;
#else
  return false;
#endif
}

}  // namespace murmur::ml
