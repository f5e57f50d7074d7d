// Fuzzes SecAggMessage::Decode: any input must yield a message or a Status
// (never a crash, leak or undefined behaviour), and whatever decodes must
// re-encode to exactly EncodedSize() bytes equal to the input (the encoding
// is canonical).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "federated/secagg_messages.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using murmur::federated::SecAggMessage;
  auto m = SecAggMessage::Decode({data, size});
  if (!m.ok()) return 0;
  std::vector<std::uint8_t> again;
  (*m)->EncodeTo(again);
  if (again.size() != (*m)->EncodedSize()) std::abort();
  if (again.size() != size || !std::equal(again.begin(), again.end(), data)) std::abort();
  return 0;
}
