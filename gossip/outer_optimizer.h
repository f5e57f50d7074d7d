// OuterOptimizer: DiLoCo's outer step (Douillard et al. 2023, "DiLoCo:
// Distributed Low-Communication Training of Language Models"), shared by the
// gossip nodes that run it (DecentralizedSgdNode with options.outer, and
// RingAllReduceNode).
//
// A round's inner phase starts at x_start (Begin) and ends, after the
// exchange, at the round's mix x_mix; the agreed pseudo-gradient is
// g = x_start - x_mix, and Apply sets x = x_start - lr step(g):
//   sgd:      step = g (at rate 1 that is x = x_mix, left exactly as it is)
//   nesterov: m = mu m + g, step = g + mu m (PyTorch's SGD with nesterov, as
//             DiLoCo uses it: lr 0.7, mu 0.9)
//   adam:     t += 1, m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2,
//             step = (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + 1e-8)
// The state (m, v, t) is the node's own; checkpoints hold it as "outer/m",
// "outer/v" and "outer/t".
//
// Thread-safety: one node owns it; Begin and Apply run in its offloaded work.
#pragma once

#include <cstddef>

#include "core/param_vector.h"
#include "core/status.h"
#include "gossip/node_state.h"

namespace murmur::gossip {

// kNone: no outer step (plain D-PSGD, CHOCO or all-reduce averaging).
enum class OuterKind { kNone, kSgd, kNesterov, kAdam };

struct OuterOptions {
  OuterKind kind = OuterKind::kNone;
  double lr = 0.7;
  double momentum = 0.9;  // nesterov: mu; adam: b1
  double beta2 = 0.99;    // adam: b2
};

class OuterOptimizer {
 public:
  OuterOptimizer(OuterOptions options, const Layout& layout);

  bool active() const { return options_.kind != OuterKind::kNone; }
  // Keeps x as x_start, the model before the inner phase. No-op when inactive.
  void Begin(const ParamVector& x);
  // x (the round's mix) <- x_start - lr step(x_start - x). No-op when inactive.
  void Apply(ParamVector& x);

  void ExportState(NodeState& out) const;
  Status ImportState(const NodeState& in);
  // Model-sized vectors it keeps: x_start and the moments.
  std::size_t state_vectors() const;

 private:
  OuterOptions options_;
  ParamVector start_;
  ParamVector m_, v_;
  double t_ = 0;
};

}  // namespace murmur::gossip
