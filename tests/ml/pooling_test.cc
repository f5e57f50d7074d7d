// 2 x 2 max pooling (ml/layers.h), whose forward and backward passes have
// their own loops (vectorized on CPUs with AVX-512F), against the definition of
// a window's first maximum.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "ml/layers.h"

namespace murmur::ml {
namespace {

TEST_CASE("2 x 2 max pooling matches the window definition at every width, with ties and NaN") {
  // Widths across the vector kernels' 16-output blocks and their tails; odd
  // sizes leave the last row and column out. Values from a small set, so
  // that windows tie, and a few NaNs (never greater, so never taken over a
  // number; a NaN first in its window stays).
  std::uint64_t state = 7;
  auto next = [&] {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return static_cast<std::uint32_t>(state >> 33);
  };
  for (std::int64_t w : {2, 3, 14, 28, 31, 32, 33, 34, 62, 70}) {
    for (std::int64_t h : {2, 5, 6}) {
      CAPTURE(w);
      CAPTURE(h);
      const Shape3 in{3, h, w};
      std::vector<float> x(static_cast<std::size_t>(in.size()));
      for (float& v : x) {
        const std::uint32_t r = next() % 64;
        v = r == 0 ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>(r % 5) - 2.0f;
      }
      const std::int64_t oh = h / 2, ow = w / 2, n = 3 * oh * ow;
      std::vector<float> y(static_cast<std::size_t>(n));
      std::vector<std::int32_t> argmax(static_cast<std::size_t>(n));
      MaxPoolForward(in, 2, x.data(), y.data(), argmax.data());
      for (std::int64_t c = 0; c < 3; ++c)
        for (std::int64_t oy = 0; oy < oh; ++oy)
          for (std::int64_t ox = 0; ox < ow; ++ox) {
            const std::int64_t corner = (c * h + 2 * oy) * w + 2 * ox;
            std::int64_t best = corner;
            for (std::int64_t at : {corner + 1, corner + w, corner + w + 1})
              if (x[static_cast<std::size_t>(at)] > x[static_cast<std::size_t>(best)]) best = at;
            const auto o = static_cast<std::size_t>((c * oh + oy) * ow + ox);
            CHECK(argmax[o] == best);
            CHECK(std::memcmp(&y[o], &x[static_cast<std::size_t>(best)], sizeof(float)) == 0);
          }
      std::vector<float> dy(static_cast<std::size_t>(n));
      for (float& v : dy) v = static_cast<float>(next() % 1000) + 1.0f;
      std::vector<float> dx(x.size(), 42.0f), expect(x.size(), 0.0f);
      for (std::size_t o = 0; o < dy.size(); ++o) expect[static_cast<std::size_t>(argmax[o])] = dy[o];
      MaxPoolBackward(in, 2, dy.data(), argmax.data(), dx.data());
      CHECK(dx == expect);
    }
  }
}

}  // namespace
}  // namespace murmur::ml
