// Fuzzes the NumPy readers (ml/npy.h): an input that starts like a zip file
// is read as an .npz archive (every array of it, and the dataset layouts),
// anything else as a .npy image. Any input must yield an array or a Status,
// never a crash, a leak, undefined behaviour or an allocation beyond what
// the input's own bytes justify; what parses must hold exactly its shape's
// bytes. Every input is also cut into byte-level text windows (ml/text.h),
// with a context length taken from its first byte: what comes back must
// hold its windows exactly.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "memfd_input.h"
#include "ml/npy.h"
#include "ml/text.h"

namespace {

void Check(const murmur::ml::NpyArray& a) {
  if (a.data.size() != static_cast<std::size_t>(a.count()) * murmur::ml::NpyItemSize(a.type)) std::abort();
  for (std::int64_t i = 0; i < a.count(); ++i) (void)a.At(i);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace murmur::ml;
  if (size > 0) {
    const std::int64_t context = data[0] % 64;  // 0 is refused
    if (auto t = TextWindows({data, size}, context, "input"); t.ok()) {
      if (!t->Validate().ok() || t->num_samples != (static_cast<std::int64_t>(size) - 1) / context)
        std::abort();
      for (std::int64_t k = 0; k < t->num_samples; ++k)
        if (t->labels[static_cast<std::size_t>(k)] != data[k * context + context]) std::abort();
    }
  }
  if (size >= 4 && std::memcmp(data, "PK\x03\x04", 4) == 0) {
    // libzip reads files: give it the input as an in-memory one.
    const MemFdInput input("npz", data, size);
    const std::string& path = input.path();
    if (path.empty()) return 0;
    if (auto names = ListNpz(path); names.ok()) {
      for (const std::string& name : *names)
        if (auto a = LoadNpzArray(path, name); a.ok()) Check(*a);
    }
    (void)LoadNpzDataset(path, "");
    return 0;
  }
  auto a = ParseNpy({reinterpret_cast<const std::byte*>(data), size}, "input");
  if (a.ok()) Check(*a);
  return 0;
}
