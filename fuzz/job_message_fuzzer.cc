// Fuzzes DecodeJobMessage (node/job/job_message.h: the job tag wrapper, kind
// 0x30, that murmurd receives from its peers) with the inner decoders a
// daemon registers (gossip, federated task/result, SecAgg+, federated job
// control): any input must yield a message or a Status (never a crash, leak
// or undefined behaviour), and whatever decodes must re-encode to exactly
// EncodedSize() bytes that carry the same inner kind and tag and decode and
// re-encode to the same bytes again (inner updates need not be
// byte-canonical, docs/compression.md, so the first encoding may differ from
// the input).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "node/job/decoders.h"
#include "node/job/job_message.h"

namespace {

// The daemon's own table (node/job/decoders.h), so the fuzzer decodes what a
// daemon decodes; its inner kinds are looked up for the unwrapped message.
const murmur::MessageDecoder* DecoderOf(std::uint32_t kind) {
  static const murmur::DecoderTable table = [] {
    murmur::compression::DecodeLimits l;
    l.max_elements = 1 << 20;  // keeps each run fast; the checks are the same
    return murmur::node::JobDecoders(l);
  }();
  if (kind == murmur::node::kJobMessageKind) return nullptr;
  auto it = table.find(kind);
  return it == table.end() ? nullptr : &it->second;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  auto m = murmur::node::DecodeJobMessage({data, size}, DecoderOf);
  if (!m.ok()) return 0;
  // The 12-byte header is read as it came.
  std::uint32_t kind = 0;
  for (int i = 3; i >= 0; --i) kind = (kind << 8) | data[i];
  std::uint64_t tag = 0;
  for (int i = 11; i >= 4; --i) tag = (tag << 8) | data[i];
  if ((*m)->inner()->kind() != kind || (*m)->tag() != tag) std::abort();
  std::vector<std::uint8_t> once;
  (*m)->EncodeTo(once);
  if (once.size() != (*m)->EncodedSize()) std::abort();
  if (!std::equal(once.begin(), once.begin() + 12, data)) std::abort();
  auto again = murmur::node::DecodeJobMessage(once, DecoderOf);
  if (!again.ok()) std::abort();
  std::vector<std::uint8_t> twice;
  (*again)->EncodeTo(twice);
  if (twice != once) std::abort();
  return 0;
}
