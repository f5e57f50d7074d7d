// Fuzzes MembershipMessage::Decode: any input must yield a message or a Status
// (never a crash, leak or undefined behaviour). The encoding is canonical, so
// whatever decodes must re-encode to exactly the input, in EncodedSize()
// bytes; and with no key known for its sender its signature must not verify.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "membership/messages.h"
#include "membership/signer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using murmur::membership::MembershipMessage;
  murmur::membership::MembershipDecodeLimits limits;
  auto m = MembershipMessage::Decode({data, size}, limits);
  if (!m.ok()) return 0;
  std::vector<std::uint8_t> again;
  (*m)->EncodeTo(again);
  if (again.size() != (*m)->EncodedSize() || again.size() != size) std::abort();
  if (!std::equal(again.begin(), again.end(), data)) std::abort();
  if ((*m)->updates().size() > limits.max_updates) std::abort();
  murmur::membership::KeyDirectory nobody;
  if ((*m)->Verify(nobody)) std::abort();
  return 0;
}
