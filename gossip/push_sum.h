// PushSumNode: Stochastic Gradient Push (Assran et al., ICML 2019) over
// directed and time-varying graphs, with running sums so that lost messages
// delay mass instead of destroying it.
//
// Each node holds a numerator x_i and a weight w_i; its model is z_i = x_i / w_i.
// Round t: x_i <- x_i - eta g(z_i) (H local steps taken on z), then node i
// keeps P_ii (x_i, w_i) and pushes P_ji (x_i, w_i) to each out-neighbour j of
// the column-stochastic P_t (Kempe et al. 2003; Nedic & Olshevsky 2015).
// Column stochasticity conserves sum_i x_i and sum_i w_i, which is why z_i
// converges to the average even on directed graphs.
//
// Loss robustness (Hadjicostis, Dominguez-Garcia and Vaidya, IEEE TAC 2016):
// instead of the share itself, node i sends its running sum
// sigma_ij = sum over rounds of everything it ever pushed to j, and j adds
// sigma_ij - rho_ji, the part it has not yet seen (rho_ji is the last running
// sum it received from i). A lost message's mass arrives with the next one.
//
// Churn (docs/algorithms.md, "Push-sum under churn"). Mass pushed towards a
// node that cannot receive it (offline, or its link down) waits in the
// running sum until that node is back, and meanwhile is missing from the
// live nodes: under churn every live node's weight shrank geometrically, and
// since SGP subtracts eta g(z) from x unscaled, z = x / w moved by eta g / w
// and diverged. Two rules keep the weights up; neither acts in a fault-free
// run, where every expected message arrives before its round ends:
//  - Silent neighbours get no new mass: node i does not add to sigma_ij for
//    an out-neighbour j that was its in-neighbour in the previous round when
//    neither j's message of that round (or a later one) nor any message of
//    j since i's previous push has come. It keeps P_ji (x_i, w_i) instead,
//    which keeps its column stochastic, and still sends j the unchanged
//    running sum (j hears from it, and gets any mass lost before). A node
//    that heard from none of its in-neighbours (it is the one cut off)
//    keeps its whole mass. Over a directed link j -> i there is no such
//    evidence and i pushes as always.
//  - A node that got no new mass since its previous push although it has
//    in-neighbours trains alone: its steps move z itself
//    (x <- x - eta w g(z)), as a lone node's SGD would; SGP's step would move
//    z by eta g / w with w what the node kept when its last pushes went
//    nowhere. Nothing is mixed in such a round, so the network's fixed point
//    is the same.
// Late mass is absorbed whenever it comes: into x and w after the run's last
// round too, and once the offloaded local steps are done if it comes while
// they read and write x and w.
//
// Catch-up (options.catch_up, static topologies): a node that finds an
// in-neighbour further ahead than the graph allows while every node waits
// (RoundTopology::InNeighbourLead: one round on an undirected graph, the
// path back to it on a directed one), so that it was down and resumed from a
// checkpoint, ends its round at once and jumps to that round; it absorbs the
// running sums of the rounds it skips, so no mass is lost, and a neighbour
// already past the current round is not waited for. Why this keeps the mass
// even after a rollback to an older checkpoint: docs/algorithms.md "Catch-up".
//
// Thread-safety: as every gossip node, one Env executor.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <vector>

#include "core/learner.h"
#include "core/round_observer.h"
#include "gossip/admission.h"
#include "gossip/codec.h"
#include "gossip/inbox.h"
#include "gossip/node.h"
#include "gossip/node_state.h"
#include "gossip/round_topology.h"

namespace murmur::gossip {

struct PushSumOptions {
  std::uint64_t rounds = 100;
  int local_steps = 1;
  Nanos round_timeout = std::chrono::seconds(60);
  // The first round this node runs (a resume after round r starts at r).
  std::uint64_t first_round = 0;
  // Static topologies only: a neighbour two or more rounds ahead ends this
  // node's round at once and the node jumps to that round (as
  // DecentralizedSgdOptions::catch_up); off, a node behind waits out
  // round_timeout in every round it is behind.
  bool catch_up = false;
  // Admission (gossip/admission.h): a running sum of another length or
  // encoding is refused on arrival; what a new running sum adds, (dx, dw),
  // is refused when dw exceeds the network's whole mass (one per node) or
  // the model it carries, dx / dw, lies farther than `plausibility` times
  // ||z_i|| from the receiver's own z_i (0: no distance bound).
  double plausibility = 10;
};

class PushSumNode final : public Node {
 public:
  // `topology` gives column-stochastic matrices (topology::PushSumWeights).
  // REQUIRES: codec->full_model_safe() (running sums are sent whole).
  PushSumNode(Env& env, RoundTopology& topology, LocalLearner& learner, ParamVector x0,
              std::unique_ptr<Codec> codec, PushSumOptions options, RoundObserver* observer);

  void Start() override;
  void OnMessage(NodeId from, MessagePtr msg) override;
  // The state after the last completed round (gossip/node_state.h): x, w and
  // every running sum. Call between rounds or once finished.
  Result<NodeState> ExportState() const override;
  // REQUIRES: before Start(), with options.first_round set.
  Status ImportState(const NodeState& state) override;

  // The de-biased model z = x / w, current as of the last combine.
  const ParamVector& params() const override { return z_; }
  double weight() const { return w_; }
  std::uint64_t round() const override { return round_; }
  // x, z, the incoming sum and two running sums per out-neighbour (of round 0).
  std::size_t state_floats() const override;
  bool finished() const { return round_ >= options_.rounds; }

 private:
  struct RunningSum {
    ParamVector x;
    double w = 0;
  };
  struct Hearing {
    std::uint64_t round = 0;  // the highest round of a message from the sender
    bool since_push = false;  // a message of it came since this node's last push
  };
  void BeginRound();
  void Push();
  // `judged_w`: the rho_w the message was judged against on arrival (-1: not
  // judged); judged again only when rho_w has moved since.
  void Absorb(NodeId from, const GossipMessage& m, ParamVector& x, double& w, double judged_w);
  // Why what m adds beyond rho (dw = m.scalar() - rho.w > 0; rho_x null: 0) is refused, or nullopt.
  std::optional<Refusal> Implausible(const GossipMessage& m, const ParamVector* rho_x, double dw) const;
  void AbsorbLate(NodeId from, std::shared_ptr<const GossipMessage> m, double judged_w);
  // What OnMessage does with a push-sum message once no local steps run.
  void Receive(NodeId from, std::shared_ptr<const GossipMessage> m);
  // BlockSquaredNorm(z_), taken once per value of z_.
  double ZNorm2() const;
  bool Heard(NodeId j) const;
  bool Alone();
  std::vector<NodeId> SilentOutNeighbours();
  void MaybeCombine();
  void Combine();
  bool Gone(NodeId j) const;

  Env& env_;
  RoundTopology& topology_;
  LocalLearner& learner_;
  std::unique_ptr<Codec> codec_;
  PushSumOptions options_;
  UpdateAdmission admission_;
  mutable std::vector<float> scratch_;  // a coded running sum decoded to be judged
  RoundObserver* observer_;

  ParamVector x_;
  double w_ = 1.0;
  ParamVector z_;
  mutable double z_norm2_ = -1;  // ZNorm2's cache; -1 after z_ changes
  ParamVector next_x_;           // the round's kept share plus what arrives
  double next_w_ = 0;
  std::map<NodeId, RunningSum> sent_;      // sigma_ij per out-neighbour
  std::map<NodeId, RunningSum> received_;  // rho_ij per in-neighbour
  std::map<NodeId, Hearing> heard_;        // per sender
  // Messages that came while the offloaded local steps read and write x, w
  // and z (judging one reads z); received once they are done, in order.
  std::vector<Received> parked_;
  RoundInbox inbox_;
  std::uint64_t round_ = 0;
  std::size_t out_degree0_ = 0;             // out-neighbours in round 0, self included (state_floats)
  std::uint64_t ahead_ = 0;                 // catch_up: the highest round seen from an in-neighbour
  std::uint64_t lead_ = 1;                  // catch_up: RoundTopology::InNeighbourLead of this node
  std::map<NodeId, std::uint64_t> latest_;  // catch_up: the highest round seen from each
  bool pushed_ = false;
  bool pushed_before_ = false;  // this node has pushed at least once since it was built
  bool training_ = false;       // the offloaded local steps of this round are running
  bool got_mass_ = false;       // some running sum brought new mass since the last push
  TimerId timeout_ = 0;
  double loss_ = 0;
};

}  // namespace murmur::gossip
