// A relayed connection's preface: the bytes an end of a relay circuit sends
// on its TCP connection to the relay before anything else (docs/protocol.md
// section 7.4):
//
//   "MRLY" || u8 version (1) || token[16]                       21 bytes
//
// Read as a Noise handshake frame's 4-byte little-endian length, "MRLY" is
// 1.5 GB, far over any handshake frame's limit: a listener tells a preface
// from a handshake by its first four bytes, and no valid handshake is taken
// for one.
//
// Thread-safety: free functions without shared state.
#pragma once

#include <array>
#include <cstdint>

#include "core/status.h"
#include "crypto/bytes.h"
#include "node/transport/envelope.h"

namespace murmur::node {

inline constexpr std::array<std::uint8_t, 4> kPrefaceMagic = {'M', 'R', 'L', 'Y'};
inline constexpr std::uint8_t kPrefaceVersion = 1;
inline constexpr std::size_t kPrefaceBytes = kPrefaceMagic.size() + 1 + kRelayTokenSize;

crypto::Bytes PrefaceBytes(const RelayToken& token);

enum class PrefaceScan {
  kNotPreface,  // the bytes are not a preface's start (a handshake, or garbage)
  kIncomplete,  // a preface's first bytes: read more
  kPreface,     // a whole preface: *token set
};
// Scans the first bytes a connection sent. DataLoss for the magic followed by
// another version.
Result<PrefaceScan> ScanPreface(crypto::ByteSpan first_bytes, RelayToken* token);

}  // namespace murmur::node
