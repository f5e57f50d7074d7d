// Synthetic datasets with known structure, for tests and quick runs.
//
// Gaussian blobs: class c has centre mu_c (drawn once from `seed`) and samples
// x = mu_c + sigma * N(0, I); classes are equally likely. Two blobs at
// distance delta have Bayes accuracy Phi(delta / (2 sigma)), a closed form the
// tests check a trained model against.
// Linear teacher: x ~ N(0, I), label = argmax_c (W x + b + noise)_c for a
// random teacher (W, b) drawn from `seed`; softmax regression can represent
// it exactly when noise = 0.
//
// `seed` fixes the centres or the teacher; `stream` picks independent samples
// of the same distribution (for example 0 for training, 1 for test).
//
// Thread-safety: free functions without shared state.
#pragma once

#include <cstdint>

#include "ml/dataset.h"

namespace murmur::ml {

struct BlobsOptions {
  std::int64_t num_samples = 10000;
  std::int64_t dim = 20;
  int num_classes = 10;
  double center_scale = 1.0;  // centres ~ center_scale * N(0, I)
  double sigma = 1.0;         // within-class standard deviation
  std::uint64_t seed = 1;
  std::uint64_t stream = 0;
};

// REQUIRES: num_samples > 0, dim > 0, num_classes > 0.
Dataset MakeGaussianBlobs(const BlobsOptions& options);

struct TeacherOptions {
  std::int64_t num_samples = 10000;
  std::int64_t dim = 20;
  int num_classes = 10;
  double noise = 0.0;  // standard deviation of Gaussian noise added to the teacher's logits
  std::uint64_t seed = 1;
  std::uint64_t stream = 0;
};

// REQUIRES: num_samples > 0, dim > 0, num_classes > 0.
Dataset MakeLinearTeacher(const TeacherOptions& options);

}  // namespace murmur::ml
