// Client-level differential privacy for federated averaging (DP-FedAvg,
// McMahan, Ramage, Talwar and Zhang, ICLR 2018).
//
// Each client's model difference is clipped to L2 norm C; the server adds
// Gaussian noise N(0, (z C)^2 I) to the sum of the K clipped differences and
// divides by K (the fixed-denominator estimator). With client-side noise each
// client adds N(0, (z C)^2 / K I) itself, so that the sum carries the same
// noise without the server seeing any noiseless update.
//
// Adaptive clipping (Andrew, Thakkar, McMahan and Ramaswamy, NeurIPS 2021,
// Algorithm 1, geometric update): each round C <- C exp(-eta (b - gamma)),
// where b is the noised fraction of clients whose update norm was <= C and
// gamma the target quantile.
//
// Thread-safety: pure functions; AdaptiveClip is a value owned by the server.
#pragma once

#include <span>

#include "core/rng.h"

namespace murmur::federated {

// L2 norm in double.
double L2Norm(std::span<const float> v);

// Scales `v` so that its L2 norm is at most `clip` (no change when it already
// is). Returns the norm before clipping. REQUIRES: clip > 0.
double ClipToNorm(std::span<float> v, double clip);

// v_j += N(0, stddev^2), independent draws from `rng`.
void AddGaussianNoise(std::span<double> v, double stddev, Rng& rng);
void AddGaussianNoise(std::span<float> v, double stddev, Rng& rng);

struct AdaptiveClipOptions {
  double target_quantile = 0.5;  // gamma
  double lr = 0.2;               // eta (Andrew et al. use 0.2)
  double count_stddev = 0;       // sigma_b, the noise on the count of unclipped clients
};

class AdaptiveClip {
 public:
  AdaptiveClip(double initial_clip, AdaptiveClipOptions options) : clip_(initial_clip), options_(options) {}

  double clip() const { return clip_; }
  // Resumes from a clip norm clip() returned (checkpoints). REQUIRES: clip > 0.
  void set_clip(double clip) { clip_ = clip; }
  // Updates C from one round: `unclipped` of `count` clients had norm <= C.
  // REQUIRES: count > 0.
  void Update(std::size_t unclipped, std::size_t count, Rng& rng);

 private:
  double clip_;
  AdaptiveClipOptions options_;
};

}  // namespace murmur::federated
