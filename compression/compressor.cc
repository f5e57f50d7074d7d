// MakeCompressor: the spec grammar of docs/compression.md.
//   spec      := base ("," modifier)*
//   base      := "none" | "fp16" | "bf16" | "int8"[":" block] | "qsgd:" s | "sign" | "terngrad"
//              | "powersgd:" rank
//              | ("topk" | "topk-approx") ":" amount (":" values | ":per-tensor")*
//              | "randk:" amount (":unbiased" | ":" values)* | "threshold:" tau (":" values)*
//   amount    := fraction in (0, 1) | count >= 1
//   values    := "fp32" | "fp16" | "bf16" | "int8"
//   modifier  := "ef" | "no-ef" | "dgc" [":" momentum]
#include "compression/compressor.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "compression/compressors.h"
#include "compression/powersgd.h"

namespace murmur::compression {

namespace {
std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (std::size_t i = 0; i <= s.size(); ++i)
    if (i == s.size() || s[i] == sep) {
      out.emplace_back(s.substr(start, i - start));
      start = i + 1;
    }
  return out;
}

bool ParseDouble(const std::string& s, double* v) {
  if (s.empty()) return false;
  char* end = nullptr;
  *v = std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size() && std::isfinite(*v);
}

bool ParseUint(const std::string& s, std::uint64_t* v) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && p == s.data() + s.size();
}

bool ParseValues(const std::string& s, ValueCoding* c) {
  if (s == "fp32")
    *c = {ValueType::kF32, 0, 0};
  else if (s == "fp16")
    *c = {ValueType::kF16, 0, 0};
  else if (s == "bf16")
    *c = {ValueType::kBF16, 0, 0};
  else if (s == "int8")
    *c = {ValueType::kInt8, 256, 0};
  else
    return false;
  return true;
}
}  // namespace

Result<std::unique_ptr<Compressor>> MakeCompressor(std::string_view spec_view) {
  const std::string spec(spec_view);
  auto bad = [&](const std::string& why) {
    return Status::InvalidArgument("bad compressor spec \"" + spec + "\": " + why);
  };
  std::vector<std::string> parts = Split(spec, ',');
  std::optional<bool> ef;
  float dgc = 0;
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const std::string& m = parts[i];
    if (m == "ef")
      ef = true;
    else if (m == "no-ef")
      ef = false;
    else if (m == "dgc")
      dgc = 0.9f;
    else if (m.rfind("dgc:", 0) == 0) {
      double v;
      if (!ParseDouble(m.substr(4), &v) || v <= 0 || v >= 1) return bad("dgc momentum must be in (0, 1)");
      dgc = static_cast<float>(v);
    } else {
      return bad("unknown modifier \"" + m + "\"");
    }
  }
  std::vector<std::string> f = Split(parts[0], ':');
  const std::string& name = f[0];
  auto dense = [&](ValueCoding c, bool default_ef) -> Result<std::unique_ptr<Compressor>> {
    if (dgc > 0) return bad("dgc applies to sparsifiers only");
    return std::unique_ptr<Compressor>(new DenseCompressor(spec, c, ef.value_or(default_ef)));
  };
  auto args = [&](std::size_t lo, std::size_t hi) { return f.size() - 1 >= lo && f.size() - 1 <= hi; };

  if (name == "none" || name == "fp16" || name == "bf16" || name == "sign" || name == "terngrad") {
    if (!args(0, 0)) return bad(name + " takes no arguments");
    if (name == "none") return dense({ValueType::kF32, 0, 0}, false);
    if (name == "fp16") return dense({ValueType::kF16, 0, 0}, false);
    if (name == "bf16") return dense({ValueType::kBF16, 0, 0}, false);
    if (name == "sign") return dense({ValueType::kSign, 0, 0}, true);
    return dense({ValueType::kTernary, 0, 0}, false);
  }
  if (name == "int8") {
    std::uint64_t block = 256;
    if (!args(0, 1) || (f.size() == 2 && (!ParseUint(f[1], &block) || block == 0 || block > kMaxInt8Block)))
      return bad("int8 takes an optional block size in [1, 65536]");
    return dense({ValueType::kInt8, static_cast<std::uint32_t>(block), 0}, false);
  }
  if (name == "qsgd") {
    std::uint64_t s;
    if (!args(1, 1) || !ParseUint(f[1], &s) || s == 0 || s > kMaxQsgdLevels)
      return bad("qsgd needs a level count s in [1, 32767]");
    return dense({ValueType::kQsgd, 0, static_cast<std::uint32_t>(s)}, false);
  }
  if (name == "powersgd") {
    std::uint64_t r;
    if (!args(1, 1) || !ParseUint(f[1], &r) || r == 0 || r > 1024)
      return bad("powersgd needs a rank in [1, 1024]");
    if (dgc > 0) return bad("dgc applies to sparsifiers only");
    return std::unique_ptr<Compressor>(
        new PowerSgdCompressor(spec, static_cast<std::uint32_t>(r), ef.value_or(true)));
  }
  SparseOptions o;
  if (name == "topk")
    o.selection = Selection::kTopK;
  else if (name == "topk-approx")
    o.selection = Selection::kTopKApprox;
  else if (name == "randk")
    o.selection = Selection::kRandomK;
  else if (name == "threshold")
    o.selection = Selection::kThreshold;
  else
    return bad("unknown compressor \"" + name + "\"");
  double amount;
  if (f.size() < 2 || !ParseDouble(f[1], &amount) || amount <= 0)
    return bad(name + " needs a positive amount");
  if (o.selection == Selection::kThreshold) {
    o.threshold = static_cast<float>(amount);
  } else if (amount < 1) {
    o.fraction = amount;
  } else {
    if (amount != std::floor(amount) || amount > 4294967295.0) return bad("a count must be a whole number");
    o.count = static_cast<std::size_t>(amount);
  }
  for (std::size_t i = 2; i < f.size(); ++i) {
    if (ParseValues(f[i], &o.values)) continue;
    if (f[i] == "per-tensor" && o.selection != Selection::kRandomK && o.selection != Selection::kThreshold)
      o.per_tensor = true;
    else if (f[i] == "unbiased" && o.selection == Selection::kRandomK)
      o.unbiased = true;
    else
      return bad("unknown option \"" + f[i] + "\" for " + name);
  }
  // Unbiased random-k is meant to run without memory; everything else keeps it.
  o.error_feedback = ef.value_or(!o.unbiased);
  o.dgc_momentum = dgc;
  return std::unique_ptr<Compressor>(new SparseCompressor(spec, o));
}

}  // namespace murmur::compression
