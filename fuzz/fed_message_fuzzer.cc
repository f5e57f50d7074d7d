// Fuzzes FedMessage::Decode (the federated task/result messages murmurd
// receives from the network): any input must yield a message or a Status
// (never a crash, leak or undefined behaviour), and whatever decodes must
// re-encode to exactly EncodedSize() bytes that decode and re-encode to the
// same bytes again (updates need not be byte-canonical, docs/compression.md).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "federated/messages.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using murmur::federated::FedMessage;
  murmur::compression::DecodeLimits limits;
  limits.max_elements = 1 << 20;  // keeps each run fast; the checks are the same
  auto m = FedMessage::Decode({data, size}, limits);
  if (!m.ok()) return 0;
  std::vector<std::uint8_t> once;
  (*m)->EncodeTo(once);
  if (once.size() != (*m)->EncodedSize()) std::abort();
  auto again = FedMessage::Decode(once, limits);
  if (!again.ok()) std::abort();
  std::vector<std::uint8_t> twice;
  (*again)->EncodeTo(twice);
  if (twice != once) std::abort();
  return 0;
}
