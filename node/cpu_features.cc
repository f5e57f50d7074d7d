#include "node/cpu_features.h"

#include "core/simd.h"
#include "crypto/cipher_state.h"

namespace murmur::node {

std::string CpuFeaturesLine() {
#if defined(__x86_64__)
  const std::string arch = "x86-64";
#elif defined(__aarch64__)
  const std::string arch = "aarch64";
#else
  const std::string arch = "other";
#endif
  return "cpu: " + arch + ", kernels " + std::string(SimdName(ActiveSimd())) + " (of " +
         std::string(SimdName(SupportedSimd())) + "), ciphers " +
         (crypto::AesGcmAvailable() ? "AES-256-GCM and ChaCha20-Poly1305"
                                    : "ChaCha20-Poly1305 (no AES and carry-less multiply instructions)");
}

}  // namespace murmur::node
