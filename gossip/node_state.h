// NodeState: everything a synchronous gossip node needs, besides its learner,
// to resume after its last completed round, as named vectors and scalars.
//
// A daemon checkpoints it (node/job/checkpoint.h) and a restarted node imports it
// before Start(), with options.first_round set to the rounds completed; the
// node then runs exactly as if it had never stopped, provided its learner is
// restored too (ml::MlLearner::ExportState). What each algorithm exports:
//   D-PSGD (full models):  "x"
//   CHOCO-SGD:             "x", "x_hat" (public copy), "s" (sum_j W_ij x^_j),
//                          "last_sent" (without error feedback only), and
//                          with catch_up "hat/j", its copy of each
//                          in-neighbour j's x^_j
//   push-sum:              "x" (numerator), scalar "w", and per neighbour j
//                          the running sums "sent/j", "sent_w/j" (sigma_ij)
//                          and "received/j", "received_w/j" (rho_ji)
//   DSGT:                  "x", "y" (tracker), "g" (previous gradient)
//   all-reduce:            "x", the outer optimizer's vectors, and with
//                          PowerSGD inside it "lowrank/residual" and the
//                          wide vector "lowrank/q" (the warm-start Q's)
// and every node adds its codec's (gossip/codec.h): the position of its
// random stream, scalars "codec/rng_*", and compressor memory if any.
// Every vector has the model's size; `wide` holds the few of other sizes
// (at most node/job/checkpoint.h's kMaxCheckpointWide values each). Names
// are short ASCII, so that a checkpoint file can list them.
//
// Thread-safety: a value type.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/param_vector.h"
#include "core/status.h"

namespace murmur::gossip {

struct NodeState {
  std::map<std::string, std::vector<float>> vectors;
  std::map<std::string, double> scalars;
  std::map<std::string, std::vector<double>> wide;

  void Put(const std::string& name, const ParamVector& v) {
    vectors[name].assign(v.span().begin(), v.span().end());
  }
  // Copies vector `name` into `out`: NotFound when absent, InvalidArgument
  // when its size is not out's.
  Status Get(const std::string& name, ParamVector& out) const;
  Result<double> Scalar(const std::string& name) const;
};

}  // namespace murmur::gossip
