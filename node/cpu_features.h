// One line on what this CPU gives murmur, for `murmur --version` and
// `murmurd --version`: the architecture, the level the kernels dispatch to
// (core/simd.h: matrix products, convolutions, compression; every level
// gives the same bits), and whether sessions may negotiate AES-256-GCM
// (crypto/aes_gcm.h, docs/protocol.md section 3.8).
#pragma once

#include <string>

namespace murmur::node {

// For example "cpu: x86-64, kernels avx512 (of avx512), ciphers AES-256-GCM
// and ChaCha20-Poly1305".
std::string CpuFeaturesLine();

}  // namespace murmur::node
