// One line on what this CPU gives murmur, for `murmur --version` and
// `murmurd --version`: the architecture, the SIMD level the compression
// kernels dispatch to (compression/simd.h), whether the native CNN's
// AVX-512 kernels run (ml/cpu.h), and whether sessions may negotiate
// AES-256-GCM (crypto/aes_gcm.h, docs/protocol.md section 3.8).
#pragma once

#include <string>

namespace murmur::node {

// For example "cpu: x86-64, compression kernels avx512, CNN kernels avx512,
// ciphers AES-256-GCM and ChaCha20-Poly1305".
std::string CpuFeaturesLine();

}  // namespace murmur::node
