#include "core/local_tensors.h"

#include <algorithm>

#include "core/check.h"

namespace murmur {

LocalTensors::LocalTensors(const Layout& layout, const std::string& prefix) {
  std::size_t total = 0;
  for (const TensorSpec& t : layout.tensors()) {
    if (t.name.rfind(prefix, 0) != 0 || t.size == 0) continue;
    ranges_.emplace_back(t.offset, t.offset + t.size);
    total += t.size;
  }
  saved_.assign(total, 0.0f);
}

void LocalTensors::Save(const ParamVector& x) {
  auto out = saved_.begin();
  for (const auto& [b, e] : ranges_) {
    MURMUR_CHECK(e <= x.size());
    out = std::copy(x.data() + b, x.data() + e, out);
  }
}

void LocalTensors::Restore(ParamVector& x) const {
  auto in = saved_.begin();
  for (const auto& [b, e] : ranges_) {
    MURMUR_CHECK(e <= x.size());
    std::copy(in, in + static_cast<std::ptrdiff_t>(e - b), x.data() + b);
    in += static_cast<std::ptrdiff_t>(e - b);
  }
}

}  // namespace murmur
