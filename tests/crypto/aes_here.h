// Whether the AES-256-GCM cases of a crypto test can run on this CPU:
// required on x86-64 (every CPU murmur targets there has AES-NI and PCLMUL),
// said aloud and skipped elsewhere (libsodium 1.0.18 has no ARMv8 AES-GCM).
#pragma once

#include <doctest/doctest.h>

#include "crypto/cipher_state.h"

namespace murmur::crypto::testing {

inline bool AesGcmRunsHere() {
#if defined(__x86_64__)
  REQUIRE(AesGcmAvailable());
#endif
  if (!AesGcmAvailable())
    MESSAGE("libsodium runs no AES-256-GCM on this CPU: the AESGCM cases are not checked here");
  return AesGcmAvailable();
}

}  // namespace murmur::crypto::testing
