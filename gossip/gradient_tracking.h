// GradientTrackingNode: decentralized stochastic gradient tracking (DSGT;
// Pu and Nedic, Math. Programming 2021; Koloskova et al., NeurIPS 2021).
//
//   x_i <- sum_j W_ij (x_j - eta y_j)
//   y_i <- sum_j W_ij y_j + g_i(x_i new) - g_i(x_i old)
//
// y_i tracks the network-average gradient, which removes the bias that
// heterogeneous (non-IID) local objectives put into D-PSGD. Each round sends
// two vectors, x - eta y and y, to every out-neighbour.
//
// Thread-safety: as every gossip node, one Env executor.
#pragma once

#include <chrono>
#include <memory>

#include "core/learner.h"
#include "gossip/codec.h"
#include "gossip/inbox.h"
#include "gossip/node_state.h"
#include "gossip/observer.h"
#include "gossip/round_topology.h"

namespace murmur::gossip {

struct GradientTrackingOptions {
  std::uint64_t rounds = 100;
  Nanos round_timeout = std::chrono::seconds(60);
  // The first round this node runs (a resume after round r starts at r).
  std::uint64_t first_round = 0;
};

class GradientTrackingNode final : public MessageSink {
 public:
  // REQUIRES: codec->full_model_safe().
  GradientTrackingNode(Env& env, RoundTopology& topology, LocalLearner& learner, ParamVector x0,
                       std::unique_ptr<Codec> codec, GradientTrackingOptions options,
                       RoundObserver* observer);

  void Start();
  void OnMessage(NodeId from, MessagePtr msg) override;
  // The state after the last completed round (gossip/node_state.h): x, the
  // tracker y and the previous gradient g. Call between rounds or once finished.
  Result<NodeState> ExportState() const;
  // REQUIRES: before Start(), with options.first_round set. Start() then
  // skips y_0 = g(x_0) and goes on with the restored tracker.
  Status ImportState(const NodeState& state);

  const ParamVector& params() const { return x_; }
  const ParamVector& tracker() const { return y_; }
  std::uint64_t round() const { return round_; }
  bool finished() const { return round_ >= options_.rounds; }

 private:
  void BeginRound();
  void MaybeCombine();
  void Combine();

  Env& env_;
  RoundTopology& topology_;
  LocalLearner& learner_;
  std::unique_ptr<Codec> codec_;
  GradientTrackingOptions options_;
  RoundObserver* observer_;

  ParamVector x_, y_, g_old_, g_new_, half_, acc_x_, acc_y_;
  RoundInbox inbox_;
  std::uint64_t round_ = 0;
  bool sent_ = false;
  bool ready_ = false;  // y_0 = g(x_0) computed
  TimerId timeout_ = 0;
  double loss_ = 0;
};

}  // namespace murmur::gossip
