#include "ml/cnn_spec.h"

#include <charconv>
#include <string>

namespace murmur::ml {
namespace {

constexpr std::string_view kPrefix = "cnn:";

struct Preset {
  std::string_view name, layers;
};
constexpr Preset kPresets[] = {
    {"cnn-fedavg", "c32k5p2,pool2,c64k5p2,pool2,d512"},
    {"lenet5", "c6k5p2,pool2,c16k5,pool2,d120,d84"},
};

// Reads the number at the front of `s` into *out and drops it from s.
bool TakeInt(std::string_view& s, std::int64_t* out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  if (ec != std::errc() || end == s.data()) return false;
  s.remove_prefix(static_cast<std::size_t>(end - s.data()));
  return true;
}

// Drops `word` from the front of s if it is there.
bool Take(std::string_view& s, std::string_view word) {
  if (!s.starts_with(word)) return false;
  s.remove_prefix(word.size());
  return true;
}

Result<CnnLayer> ParseLayer(std::string_view token, const std::string& where) {
  const std::string bad = where + ": layer '" + std::string(token) + "' ";
  std::string_view s = token;
  CnnLayer layer;
  auto in_range = [&](std::int64_t v, std::int64_t lo, std::int64_t hi, const char* what) -> Status {
    if (v < lo || v > hi)
      return Status::InvalidArgument(bad + "has " + what + " " + std::to_string(v) + ", outside [" +
                                     std::to_string(lo) + ", " + std::to_string(hi) + "]");
    return Status::Ok();
  };
  if (Take(s, "pool") || Take(s, "max") || Take(s, "avg")) {
    layer.kind = token.starts_with("avg") ? CnnLayerKind::kAvgPool : CnnLayerKind::kMaxPool;
    if (!TakeInt(s, &layer.size) || !s.empty())
      return Status::InvalidArgument(bad + "should read pool<K>, max<K> or avg<K>");
    MURMUR_RETURN_IF_ERROR(in_range(layer.size, 1, 64, "window"));
  } else if (Take(s, "gn")) {
    layer.kind = CnnLayerKind::kGroupNorm;
    if (!TakeInt(s, &layer.size) || !s.empty())
      return Status::InvalidArgument(bad + "should read gn<groups>");
    MURMUR_RETURN_IF_ERROR(in_range(layer.size, 1, 4096, "groups"));
  } else if (Take(s, "drop")) {
    layer.kind = CnnLayerKind::kDropout;
    double p = -1;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), p);
    if (ec != std::errc() || end != s.data() + s.size() || !(p >= 0 && p < 1))
      return Status::InvalidArgument(bad + "should read drop<P> with P in [0, 1)");
    layer.p = p;
  } else if (Take(s, "c")) {
    layer.kind = CnnLayerKind::kConv;
    layer.relu = true;
    if (!TakeInt(s, &layer.size) || !Take(s, "k") || !TakeInt(s, &layer.kernel))
      return Status::InvalidArgument(bad + "should read c<channels>k<kernel>[s<stride>][p<padding>]");
    if (Take(s, "s") && !TakeInt(s, &layer.stride))
      return Status::InvalidArgument(bad + "has no stride after 's'");
    if (Take(s, "p") && !TakeInt(s, &layer.pad))
      return Status::InvalidArgument(bad + "has no padding after 'p'");
    if (!s.empty()) return Status::InvalidArgument(bad + "has '" + std::string(s) + "' left over");
    MURMUR_RETURN_IF_ERROR(in_range(layer.size, 1, 4096, "channels"));
    MURMUR_RETURN_IF_ERROR(in_range(layer.kernel, 1, 64, "kernel"));
    MURMUR_RETURN_IF_ERROR(in_range(layer.stride, 1, 64, "stride"));
    MURMUR_RETURN_IF_ERROR(in_range(layer.pad, 0, 64, "padding"));
  } else if (Take(s, "d")) {
    layer.kind = CnnLayerKind::kDense;
    layer.relu = true;
    if (!TakeInt(s, &layer.size) || !s.empty()) return Status::InvalidArgument(bad + "should read d<units>");
    MURMUR_RETURN_IF_ERROR(in_range(layer.size, 1, 1 << 16, "units"));
  } else {
    return Status::InvalidArgument(bad +
                                   "unknown (expected c<N>k<K>[s<S>][p<P>], d<N>, pool<K>, max<K>, avg<K>, "
                                   "gn<G> or drop<P>)");
  }
  return layer;
}

}  // namespace

bool IsCnnSpec(std::string_view spec) {
  if (spec.starts_with(kPrefix)) return true;
  for (const Preset& p : kPresets)
    if (spec == p.name) return true;
  return false;
}

Result<std::vector<CnnLayer>> ParseCnnLayers(std::string_view spec) {
  const std::string where = "model spec '" + std::string(spec) + "'";
  std::string_view text;
  if (spec.starts_with(kPrefix)) text = spec.substr(kPrefix.size());
  for (const Preset& p : kPresets)
    if (spec == p.name) text = p.layers;
  if (text.empty()) return Status::InvalidArgument(where + " has no layers");
  std::vector<CnnLayer> layers;
  for (;;) {
    const std::size_t comma = text.find(',');
    MURMUR_ASSIGN_OR_RETURN(CnnLayer layer, ParseLayer(text.substr(0, comma), where));
    // A norm right after a layer with a ReLU takes the ReLU over: conv, norm, ReLU.
    if (layer.kind == CnnLayerKind::kGroupNorm && !layers.empty() && layers.back().relu) {
      layers.back().relu = false;
      layer.relu = true;
    }
    layers.push_back(layer);
    if (layers.size() > kMaxCnnLayers)
      return Status::InvalidArgument(where + ": more than " + std::to_string(kMaxCnnLayers) + " layers");
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return layers;
}

Result<CnnOptions> ParseCnnSpec(std::string_view spec, Shape3 input, int num_classes,
                                std::int64_t max_params) {
  const std::string where = "model spec '" + std::string(spec) + "'";
  CnnOptions o;
  o.spec = std::string(spec);
  o.input = input;
  o.num_classes = num_classes;
  MURMUR_ASSIGN_OR_RETURN(o.layers, ParseCnnLayers(spec));
  auto shapes = Cnn::Shapes(o);
  if (!shapes.ok()) return Status::InvalidArgument(where + ": " + shapes.status().message());
  // Bound the activations and the parameters before anything is allocated
  // (a Cnn holds only its Layout, never parameters, so building one is cheap).
  std::int64_t values = input.size();
  for (const Shape3& out : *shapes) values += out.size();
  if (values > kMaxActivationValues)
    return Status::InvalidArgument(where + ": more than " + std::to_string(kMaxActivationValues) +
                                   " activation values per sample");
  if (static_cast<std::int64_t>(Cnn(o).layout().total_size()) > max_params)
    return Status::InvalidArgument(where + ": more than " + std::to_string(max_params) + " parameters");
  return o;
}

}  // namespace murmur::ml
