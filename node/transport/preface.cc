#include "node/transport/preface.h"

#include <algorithm>
#include <string>

namespace murmur::node {

crypto::Bytes PrefaceBytes(const RelayToken& token) {
  crypto::Bytes out(kPrefaceMagic.begin(), kPrefaceMagic.end());
  out.push_back(kPrefaceVersion);
  out.insert(out.end(), token.begin(), token.end());
  return out;
}

Result<PrefaceScan> ScanPreface(crypto::ByteSpan first_bytes, RelayToken* token) {
  const std::size_t magic = std::min(first_bytes.size(), kPrefaceMagic.size());
  if (!std::equal(first_bytes.begin(), first_bytes.begin() + static_cast<std::ptrdiff_t>(magic),
                  kPrefaceMagic.begin()))
    return PrefaceScan::kNotPreface;
  if (first_bytes.size() <= kPrefaceMagic.size()) return PrefaceScan::kIncomplete;
  if (first_bytes[kPrefaceMagic.size()] != kPrefaceVersion)
    return Status::DataLoss("relay preface of version " + std::to_string(first_bytes[kPrefaceMagic.size()]) +
                            ", this node speaks version " + std::to_string(kPrefaceVersion));
  if (first_bytes.size() < kPrefaceBytes) return PrefaceScan::kIncomplete;
  std::copy_n(first_bytes.begin() + kPrefaceMagic.size() + 1, kRelayTokenSize, token->begin());
  return PrefaceScan::kPreface;
}

}  // namespace murmur::node
