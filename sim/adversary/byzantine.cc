#include "sim/adversary/byzantine.h"

#include "compression/update.h"
#include "core/check.h"

namespace murmur::sim {

ByzantineCoalition::ByzantineCoalition(Simulator& sim, const topology::MixingMatrix& w,
                                       std::vector<bool> byzantine, AttackParams params)
    : sim_(sim),
      byzantine_(std::move(byzantine)),
      params_(params),
      watchers_(w.size()),
      last_round_(w.size(), kNoRound) {
  MURMUR_CHECK(params_.kind != GossipAttack::kNone);
  MURMUR_CHECK(byzantine_.size() == w.size() && w.size() == sim.num_nodes());
  const NodeId n = w.size();
  // Row i of W lists i's in-neighbours j (W_ij > 0); out-neighbours come from the transpose.
  std::vector<std::vector<NodeId>> out(n);
  for (NodeId i = 0; i < n; ++i) {
    for (const auto& e : w.Row(i)) {
      if (e.col != i) out[e.col].push_back(i);
    }
  }
  for (NodeId b = 0; b < n; ++b) {
    if (!byzantine_[b]) continue;
    if (params_.kind == GossipAttack::kSignFlip) {
      // -s times the mean of what b hears, sent to every honest out-neighbour.
      Job job;
      for (const auto& e : w.Row(b)) {
        if (e.col != b && !byzantine_[e.col]) job.needs.push_back(e.col);
      }
      for (NodeId i : out[b]) {
        if (!byzantine_[i]) job.sends.emplace_back(b, i);
      }
      if (!job.needs.empty() && !job.sends.empty()) jobs_.push_back(std::move(job));
    }
  }
  if (params_.kind != GossipAttack::kSignFlip) {
    // One job per targeted honest node, sent by each of its Byzantine in-neighbours.
    for (NodeId i = 0; i < n; ++i) {
      if (byzantine_[i]) continue;
      Job job;
      job.target = i;
      job.needs.push_back(i);
      for (const auto& e : w.Row(i)) {
        if (e.col == i) continue;
        if (byzantine_[e.col]) {
          job.byzantine_weight += e.weight;
          job.sends.emplace_back(e.col, i);
        } else {
          job.needs.push_back(e.col);
          job.good_weights.push_back(e.weight);
        }
      }
      if (!job.sends.empty()) jobs_.push_back(std::move(job));
    }
  }
  for (std::size_t j = 0; j < jobs_.size(); ++j) {
    for (NodeId k : jobs_[j].needs) watchers_[k].push_back(j);
  }
}

void ByzantineCoalition::Observe(NodeId from, const MessagePtr& msg) {
  if (watchers_[from].empty() || msg->kind() != gossip::kGossipMessageKind) return;
  auto m = std::static_pointer_cast<const gossip::GossipMessage>(msg);
  if (m->channel() != gossip::Channel::kModel) return;
  const std::uint64_t t = m->round();
  // A node sends one model per round, to each neighbour in turn: count it once.
  if (last_round_[from] != kNoRound && t <= last_round_[from]) return;
  last_round_[from] = t;
  // Rounds that never completed (a needed node went silent) are given up.
  while (!rounds_.empty() && rounds_.begin()->first + kWindow < t) rounds_.erase(rounds_.begin());
  if (!rounds_.empty() && t + kWindow < rounds_.begin()->first) return;
  Round& r = rounds_[t];
  if (r.arrived.empty()) r.arrived.assign(jobs_.size(), 0);
  r.models.emplace(from, m);
  for (std::size_t j : watchers_[from]) {
    if (++r.arrived[j] != jobs_[j].needs.size()) continue;
    Fire(jobs_[j], t, r);
    ++r.fired;
  }
  if (r.fired == jobs_.size()) rounds_.erase(t);
}

void ByzantineCoalition::Fire(const Job& job, std::uint64_t round, const Round& r) {
  std::vector<std::vector<float>> decoded(job.needs.size());
  std::vector<std::span<const float>> models(job.needs.size());
  std::size_t d = 0;
  for (std::size_t k = 0; k < job.needs.size(); ++k) {
    const compression::Update& u = r.models.at(job.needs[k])->update();
    d = u.size();
    if (const float* p = u.dense_f32(); p != nullptr) {
      models[k] = {p, d};
    } else {
      decoded[k] = u.ToDense();
      models[k] = decoded[k];
    }
  }
  AttackView view;
  if (job.target == kNoNode) {
    view.good = models;
  } else {
    view.target = models[0];
    view.good.assign(models.begin() + 1, models.end());
    view.good_weights = job.good_weights;
    view.byzantine_weight = job.byzantine_weight;
  }
  std::vector<float> crafted(d);
  CraftAttack(params_, view, crafted);
  auto msg = std::make_shared<const gossip::GossipMessage>(gossip::Channel::kModel, round, 0.0,
                                                           compression::DenseF32Update(crafted));
  for (const auto& [from, to] : job.sends) sim_.env(from).Send(to, msg);
  ++crafted_;
}

}  // namespace murmur::sim
