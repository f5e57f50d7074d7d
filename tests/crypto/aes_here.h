// Whether the AES-256-GCM cases of a crypto test can run on this CPU:
// required on x86-64 (every CPU murmur targets there has AES-NI and PCLMUL),
// said aloud and skipped elsewhere. LibsodiumAesRunsHere: whether the second
// implementation the cases compare with, libsodium's, runs here too (1.0.18
// has none on ARMv8, where the cacophony vectors stay the outside truth).
#pragma once

#include <doctest/doctest.h>
#include <sodium.h>

#include "crypto/cipher_state.h"

namespace murmur::crypto::testing {

inline bool AesGcmRunsHere() {
#if defined(__x86_64__)
  REQUIRE(AesGcmAvailable());
#endif
  if (!AesGcmAvailable())
    MESSAGE(
        "this CPU has no AES and carry-less multiply instructions: the AESGCM cases are not checked here");
  return AesGcmAvailable();
}

inline bool LibsodiumAesRunsHere() {
  if (!AesGcmRunsHere()) return false;
  EnsureSodium();
  const bool here = crypto_aead_aes256gcm_is_available() == 1;
#if defined(__x86_64__)
  REQUIRE(here);
#endif
  if (!here)
    MESSAGE("libsodium has no AES-256-GCM on this CPU: the cases comparing with it are not checked here");
  return here;
}

}  // namespace murmur::crypto::testing
