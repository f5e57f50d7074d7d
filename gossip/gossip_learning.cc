#include "gossip/gossip_learning.h"

#include <algorithm>

#include <cmath>

#include "core/check.h"

namespace murmur::gossip {

GossipLearningNode::GossipLearningNode(Env& env, RoundTopology* topology, NodeId num_nodes,
                                       LocalLearner& learner, ParamVector x0, std::unique_ptr<Codec> codec,
                                       GossipLearningOptions options, RoundObserver* observer)
    : env_(env),
      topology_(topology),
      num_nodes_(num_nodes),
      learner_(learner),
      codec_(std::move(codec)),
      options_(options),
      admission_(codec_->codec_spec(), options_.plausibility),
      observer_(observer),
      rng_(env.MakeRng(RngPurpose::kPeerSampling)),
      x_(std::move(x0)) {
  MURMUR_CHECK_MSG(codec_->full_model_safe(),
                   "gossip learning sends whole models: use none, fp16, bf16 or int8");
  MURMUR_CHECK(options_.uniform_peers || topology_ != nullptr);
}

void GossipLearningNode::Start() {
  // Desynchronize: the first wake-up is uniform in [0, period).
  auto first =
      Nanos(static_cast<std::int64_t>(rng_.Uniform() * static_cast<double>(options_.period.count())));
  env_.StartTimer(first, [this] { Wake(); });
}

std::vector<NodeId> GossipLearningNode::PickPeers() {
  const auto k = static_cast<std::size_t>(options_.fanout);
  if (sampler_ != nullptr) return sampler_->Sample(k);  // distinct by contract
  // Distinct peers by drawing again on a repeat: k is small (at most n - 1,
  // and at most the out-degree on a graph), and one peer takes one draw, as
  // a fanout of 1 always has.
  std::size_t available = num_nodes_ > 0 ? num_nodes_ - 1 : 0;
  if (!options_.uniform_peers) available = topology_->Out(wakeups_).Row(env_.self()).size() - 1;
  std::vector<NodeId> peers;
  while (peers.size() < std::min(k, available)) {
    const NodeId p = PickPeer();
    if (std::find(peers.begin(), peers.end(), p) == peers.end()) peers.push_back(p);
  }
  return peers;
}

NodeId GossipLearningNode::PickPeer() {
  const NodeId self = env_.self();
  if (options_.uniform_peers) {
    if (num_nodes_ < 2) return self;
    auto j = static_cast<NodeId>(rng_.UniformInt(num_nodes_ - 1));
    return j >= self ? j + 1 : j;
  }
  auto row = topology_->Out(wakeups_).Row(self);
  std::size_t others = row.size() - 1;
  if (others == 0) return self;
  std::size_t pick = rng_.UniformInt(others);
  for (const auto& e : row) {
    if (e.col == self) continue;
    if (pick-- == 0) return e.col;
  }
  return self;
}

void GossipLearningNode::Wake() {
  if (env_.Now() > options_.horizon) return;
  if (options_.max_wakeups > 0 && wakeups_ >= options_.max_wakeups) return;
  auto msg = std::make_shared<const GossipMessage>(Channel::kGossipModel, wakeups_, age_,
                                                   codec_->Compress(x_.span(), wakeups_));
  for (NodeId peer : PickPeers()) env_.Send(peer, msg);
  training_ = true;
  env_.Offload(
      options_.local_steps * learner_.FlopsPerStep(),
      [this] { loss_ = learner_.Train(x_, options_.local_steps); },
      [this] {
        training_ = false;
        // The simulator runs the training when it is offloaded and delivers
        // what arrives meanwhile after it, before the age grows: the same order.
        std::vector<std::pair<NodeId, std::shared_ptr<const GossipMessage>>> deferred;
        deferred.swap(deferred_);
        for (const auto& [from, m] : deferred) Merge(from, *m);
        age_ += options_.local_steps;
        // Counted before the observer runs, so that a state it exports is complete.
        const std::uint64_t done = wakeups_++;
        if (observer_ != nullptr) observer_->OnRoundDone(env_.self(), done, loss_);
        env_.StartTimer(options_.period, [this] { Wake(); });
      });
}

Result<NodeState> GossipLearningNode::ExportState() const {
  NodeState s;
  MURMUR_RETURN_IF_ERROR(codec_->ExportState(s));
  s.Put("x", x_);
  s.scalars["age"] = age_;
  s.scalars["wakeups"] = static_cast<double>(wakeups_);
  return s;
}

Status GossipLearningNode::ImportState(const NodeState& state) {
  MURMUR_RETURN_IF_ERROR(state.Get("x", x_));
  MURMUR_ASSIGN_OR_RETURN(double age, state.Scalar("age"));
  MURMUR_ASSIGN_OR_RETURN(double wakeups, state.Scalar("wakeups"));
  if (!(age >= 0) || !(wakeups >= 0))
    return Status::InvalidArgument("gossip learning state: age and wakeups must be >= 0");
  MURMUR_RETURN_IF_ERROR(codec_->ImportState(state));
  age_ = age;
  wakeups_ = static_cast<std::uint64_t>(wakeups);
  return Status::Ok();
}

void GossipLearningNode::OnMessage(NodeId from, MessagePtr msg) {
  if (msg->kind() != kGossipMessageKind) return;
  auto m = std::static_pointer_cast<const GossipMessage>(msg);
  if (m->channel() != Channel::kGossipModel) return;
  // Length, encoding and (without a plausibility bound, which judges them
  // at the merge) finite values, as the model arrives (gossip/admission.h).
  if (auto why = admission_.Check(m->update(), x_.size(), false, admission_.plausibility() <= 0)) {
    env_.Refuse(from, *why);
    return;
  }
  if (options_.defer_merges && training_) {
    if (deferred_.size() < kMaxDeferred) deferred_.emplace_back(from, std::move(m));
    return;
  }
  Merge(from, *m);
}

void GossipLearningNode::Merge(NodeId from, const GossipMessage& m) {
  const double a_j = m.scalar();
  // From the network on a daemon: an infinite or negative age would make the weights NaN.
  if (!(a_j >= 0) || !std::isfinite(a_j)) {
    env_.Refuse(from, Refusal::kImplausible);
    return;
  }
  if (admission_.plausibility() > 0) {
    if (auto why = admission_.JudgeUpdate(m.update(), x_.span(), scratch_)) {
      env_.Refuse(from, *why);
      return;
    }
  }
  double wi = 0.5, wj = 0.5;
  if (options_.age_weighted && age_ + a_j > 0) {
    wi = age_ / (age_ + a_j);
    wj = a_j / (age_ + a_j);
  }
  const auto fi = static_cast<float>(wi), fj = static_cast<float>(wj);
  if (const float* v = m.update().dense_f32(); v != nullptr) {
    // x <- wi x, then x += wj v (AddTo's rounding), in one pass: the pass the
    // judging above costs is saved here.
    float* x = x_.data();
    for (std::size_t i = 0; i < x_.size(); ++i) x[i] = x[i] * fi + fj * v[i];
  } else {
    x_.vec() *= fi;
    Status st = m.update().AddTo(x_.span(), fj);
    MURMUR_CHECK_MSG(st.ok(), st.ToString());
  }
  age_ = std::max(age_, a_j);
}

}  // namespace murmur::gossip
