// Fuzzes Update::Decode: any input must yield an Update or a Status (never a
// crash, leak or undefined behaviour), and whatever decodes must re-encode to
// exactly EncodedSize() bytes that decode to the same update.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "compression/update.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using murmur::compression::Update;
  murmur::compression::DecodeLimits limits;
  limits.max_elements = 1 << 20;  // keeps each run fast; the checks are the same
  murmur::Result<Update> u = Update::Decode({data, size}, limits);
  if (!u.ok()) return 0;
  std::vector<std::uint8_t> again;
  u->Encode(again);
  if (again.size() != u->EncodedSize()) std::abort();
  murmur::Result<Update> v = Update::Decode(again, limits);
  if (!v.ok() || !(*v == *u)) std::abort();
  std::vector<float> out(u->size(), 0.0f);
  if (!u->AddTo(out).ok()) std::abort();
  return 0;
}
