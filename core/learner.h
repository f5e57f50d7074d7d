// LocalLearner: the seam between a node's algorithm and the model it trains.
//
// Gossip and federated algorithms only need to take SGD steps on local data
// and, for gradient tracking, a stochastic gradient; they never see the
// model, the data or the optimizer, and so do not depend on ml/. The
// simulator and the daemon both use ml::MlLearner (an ml::Model, the node's
// data partition and SGD); tests implement it with closed-form quadratics.
//
// Thread-safety: Train and Gradient run inside Env::Offload work, possibly on
// a worker thread, but never concurrently for the same learner.
#pragma once

#include <cstdint>

#include "core/param_vector.h"

namespace murmur {

class LocalLearner {
 public:
  virtual ~LocalLearner() = default;

  // Takes `steps` local optimizer steps on `params` in place (each on a fresh
  // mini-batch); returns the mean training loss over them.
  virtual double Train(ParamVector& params, int steps) = 0;

  // Writes a stochastic gradient at `params` (one mini-batch) into `grad`
  // (same layout); returns the batch loss.
  virtual double Gradient(const ParamVector& params, ParamVector& grad) = 0;

  // The plain SGD step size, for algorithms that apply gradients themselves
  // (gradient tracking), at local step count `step`.
  virtual double LearningRate(std::uint64_t step) const = 0;

  // Floating-point operations of `steps` training steps (or gradients), for
  // the simulator's virtual compute time.
  virtual double FlopsPerStep() const = 0;
};

}  // namespace murmur
