#include "core/param_vector.h"

#include <doctest/doctest.h>

#include <cstdint>

namespace murmur {
namespace {

TEST_CASE("ParamVector is 64-byte aligned, zeroed and laid out back to back") {
  Layout layout;
  layout.Add("w1", {784, 128});
  layout.Add("b1", {128});
  layout.Add("w2", {128, 10});
  ParamVector p(layout);
  CHECK(p.size() == 784 * 128 + 128 + 128 * 10);
  CHECK(reinterpret_cast<std::uintptr_t>(p.data()) % kParamAlignment == 0);
  for (float v : p.span()) REQUIRE(v == 0.0f);
  CHECK(p.layout().tensor(1).offset == 784 * 128);
  CHECK(p.layout().tensor(2).offset == 784 * 128 + 128);
  CHECK(p.layout().Find("b1").value() == 1);
  CHECK(p.layout().Find("nope").status().code() == StatusCode::kNotFound);
}

TEST_CASE("Views alias the buffer without copying") {
  Layout layout;
  layout.Add("w", {2, 3});
  layout.Add("b", {3});
  ParamVector p(layout);
  auto w = p.matrix(0);
  CHECK(w.rows() == 2);
  CHECK(w.cols() == 3);
  w(1, 2) = 5.0f;  // row-major: element 1 * 3 + 2
  CHECK(p[5] == 5.0f);
  p.tensor_span(1)[0] = 7.0f;
  CHECK(p[6] == 7.0f);
  p.vec() *= 2.0f;
  CHECK(p[5] == 10.0f);
  CHECK(p.vec().data() == p.data());
}

TEST_CASE("Clone is deep, moves are cheap") {
  ParamVector a(100);
  a[3] = 1.5f;
  ParamVector b = a.Clone();
  b[3] = 2.0f;
  CHECK(a[3] == 1.5f);
  const float* raw = a.data();
  ParamVector c = std::move(a);
  CHECK(c.data() == raw);
  CHECK(c.layout() == b.layout());
  ParamVector empty;
  CHECK(empty.empty());
  CHECK(empty.Clone().size() == 0);
}

}  // namespace
}  // namespace murmur
