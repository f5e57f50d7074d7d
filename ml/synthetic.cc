#include "ml/synthetic.h"

#include <vector>

#include "core/check.h"
#include "core/rng.h"

namespace murmur::ml {
namespace {

// Stream ids under the data seed: 0 for the structure, 1 + stream for samples.
constexpr std::uint64_t kStructureStream = 0;

Dataset Empty(std::string name, std::int64_t n, std::int64_t d, int c) {
  MURMUR_CHECK(n > 0 && n <= kMaxSamples && d > 0 && c > 0);
  Dataset ds;
  ds.name = std::move(name);
  ds.num_samples = n;
  ds.dim = d;
  ds.num_classes = c;
  ds.features.resize(static_cast<std::size_t>(n * d));
  ds.labels.resize(static_cast<std::size_t>(n));
  return ds;
}

}  // namespace

Dataset MakeGaussianBlobs(const BlobsOptions& o) {
  Dataset ds = Empty("synthetic:blobs", o.num_samples, o.dim, o.num_classes);
  Rng structure(o.seed, kStructureStream, RngPurpose::kGeneric);
  std::vector<double> centers(static_cast<std::size_t>(o.num_classes * o.dim));
  for (double& v : centers) v = o.center_scale * structure.Normal();
  Rng rng(o.seed, 1 + o.stream, RngPurpose::kGeneric);
  for (std::int64_t i = 0; i < o.num_samples; ++i) {
    int y = static_cast<int>(rng.UniformInt(static_cast<std::uint64_t>(o.num_classes)));
    ds.labels[static_cast<std::size_t>(i)] = y;
    float* x = ds.features.data() + i * o.dim;
    const double* mu = centers.data() + static_cast<std::int64_t>(y) * o.dim;
    for (std::int64_t j = 0; j < o.dim; ++j) x[j] = static_cast<float>(mu[j] + o.sigma * rng.Normal());
  }
  return ds;
}

Dataset MakeLinearTeacher(const TeacherOptions& o) {
  Dataset ds = Empty("synthetic:teacher", o.num_samples, o.dim, o.num_classes);
  Rng structure(o.seed, kStructureStream, RngPurpose::kGeneric);
  std::vector<double> w(static_cast<std::size_t>(o.num_classes * o.dim));
  std::vector<double> b(static_cast<std::size_t>(o.num_classes));
  for (double& v : w) v = structure.Normal();
  for (double& v : b) v = structure.Normal();
  Rng rng(o.seed, 1 + o.stream, RngPurpose::kGeneric);
  for (std::int64_t i = 0; i < o.num_samples; ++i) {
    float* x = ds.features.data() + i * o.dim;
    for (std::int64_t j = 0; j < o.dim; ++j) x[j] = static_cast<float>(rng.Normal());
    int best = 0;
    double best_logit = 0;
    for (int c = 0; c < o.num_classes; ++c) {
      double z = b[static_cast<std::size_t>(c)];
      const double* wc = w.data() + static_cast<std::int64_t>(c) * o.dim;
      for (std::int64_t j = 0; j < o.dim; ++j) z += wc[j] * x[j];
      if (o.noise > 0) z += o.noise * rng.Normal();
      if (c == 0 || z > best_logit) best = c, best_logit = z;
    }
    ds.labels[static_cast<std::size_t>(i)] = best;
  }
  return ds;
}

}  // namespace murmur::ml
