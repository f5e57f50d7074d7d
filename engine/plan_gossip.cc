// The checks of a gossip spec (PlanJob, engine/plan.h), filling its GossipPlan.
#include <cmath>
#include <string>

#include "engine/algorithms.h"
#include "engine/plan_parts.h"
#include "engine/topology.h"

namespace murmur::engine::internal {

namespace {

Result<GossipAttack> ParseGossipAttack(const std::string& name) {
  if (name == "none") return GossipAttack::kNone;
  if (name == "sign-flip") return GossipAttack::kSignFlip;
  if (name == "alie") return GossipAttack::kAlie;
  if (name == "ipm") return GossipAttack::kIpm;
  if (name == "dissensus") return GossipAttack::kDissensus;
  return Status::InvalidArgument("gossip attack '" + name +
                                 "' is not one of none, sign-flip, alie, ipm, dissensus");
}

Result<gossip::OuterKind> ParseOuterOptimizer(const std::string& name) {
  if (name == "sgd") return gossip::OuterKind::kSgd;
  if (name == "nesterov") return gossip::OuterKind::kNesterov;
  if (name == "adam") return gossip::OuterKind::kAdam;
  return Status::InvalidArgument("spec field 'outer_optimizer': '" + name + "' is not sgd, nesterov or adam");
}

}  // namespace

Status PlanGossip(const proto::JobSpec& s, Host host, GossipPlan& plan) {
  const std::string& a = s.algorithm();
  if (TopologyKind(s.topology()) == "vehicles" && host == Host::kDaemon)
    return Bad("topology", "vehicles (contact graphs of simulated cars) exists in the simulator only");
  if (IsLinkAware(s.topology()) && host == Host::kDaemon)
    return Bad("topology",
               s.topology() +
                   " is chosen from link costs: `murmur job submit` chooses it from the daemons' "
                   "measured links and sends the graph as edges:U V;...; or give murmurd a graph as "
                   "file:EDGES.txt or edges:...");
  const bool dpsgd = IsDpsgd(a);
  const bool time_varying = IsTimeVarying(s.topology());
  const std::string compression = CompressionOf(s);
  auto codec = gossip::CodecSpec::Parse(compression);
  if (!codec.ok()) return codec.status().WithContext("spec field 'compression'");
  const bool lowrank_allreduce = IsRingAllReduce(a) && codec->lowrank > 0;
  if (!codec->full_model_safe && !dpsgd && !lowrank_allreduce)
    return Bad("compression",
               a + " sends whole vectors; use none, fp16, bf16 or int8" +
                   (IsRingAllReduce(a) ? std::string(", or powersgd:R inside the all-reduce") : "") +
                   " (got '" + compression + "')");
  if (lowrank_allreduce && s.groups() != 1 && TopologyKind(s.group_topology()) != "complete")
    return Bad("compression", "'" + compression +
                                  "' inside a hierarchical all-reduce needs group_topology complete: the "
                                  "groups' factors must mix to one mean (got '" +
                                  s.group_topology() + "')");
  if (!codec->full_model_safe && time_varying) {
    std::string named = "'" + compression + "'";
    if (s.compression() == "default") named.append(" (the default for ").append(s.algorithm()).append(")");
    return Bad("compression", named +
                                  " is sent as CHOCO differences, which need a static topology; use fp16, "
                                  "bf16 or int8 with '" +
                                  s.topology() + "'");
  }
  if (host == Host::kDaemon && compression.rfind("powersgd", 0) == 0 && !lowrank_allreduce)
    return Bad("compression",
               "PowerSGD's low-rank state is not checkpointed by murmurd; use topk, randk or a value coding");
  if (!(s.gamma() >= 0 && s.gamma() <= 1))
    return Bad("gamma", "must be in [0, 1] (0 picks the default), got " + Num(s.gamma()));
  plan.compression = compression;
  plan.codec = codec.value();
  plan.gamma = s.gamma() > 0 ? s.gamma() : (codec->value_coding ? 1.0 : 0.05);
  plan.time_varying = time_varying;
  if (s.overlap()) {
    if (!IsRingAllReduce(a))
      return Bad("overlap", "applies to allreduce and diloco-allreduce (got " + a + ")");
    if (s.groups() != 1) return Bad("overlap", "runs one ring: groups must be 1");
  }
  if (s.collective() != "ring") {
    if (!IsRingAllReduce(a))
      return Bad("collective", "applies to allreduce and diloco-allreduce (got " + a + ")");
    auto collective = gossip::ParseCollective(s.collective());
    if (!collective.ok()) return collective.status().WithContext("spec field 'collective'");
    plan.collective = collective.value();
  }
  if (s.groups() != 1) {
    if (!IsRingAllReduce(a))
      return Bad("groups", "applies to allreduce and diloco-allreduce (got " + a + ")");
    if (s.groups() == 0 || s.nodes() % s.groups() != 0)
      return Bad("groups", "must divide nodes into groups of equal size (" + std::to_string(s.groups()) +
                               " groups of " + std::to_string(s.nodes()) + " nodes)");
    if (s.topology() != "ring")
      return Bad("topology",
                 "must be ring with groups: each group is a ring of its members in id order (got '" +
                     s.topology() + "')");
    proto::JobSpec between = s;
    between.set_topology(s.group_topology());
    between.set_weights("default");
    if (IsTimeVarying(s.group_topology()) || IsLinkAware(s.group_topology()))
      return Bad("group_topology", "must be a static graph kind (got '" + s.group_topology() + "')");
    auto made = MakeGraphTopology(between, s.groups());
    if (!made.ok()) return made.status().WithContext("spec field 'group_topology'");
  }
  const std::string kind = TopologyKind(s.topology());
  if (IsRingAllReduce(a) && kind != "ring" && kind != "link-aware-ring" && kind != "edges" && kind != "file")
    return Bad("topology",
               "must be ring (the node ids in order), link-aware-ring (the ring of least cost in the "
               "link model, or in the measured links on murmurd) or a ring given as edges:... or "
               "file:...: " +
                   a + " runs a ring all-reduce (got '" + s.topology() + "')");
  if (a == "diloco" || a == "diloco-allreduce") {
    MURMUR_ASSIGN_OR_RETURN(plan.outer.kind, ParseOuterOptimizer(s.outer_optimizer()));
    plan.outer.lr = s.outer_lr();
    plan.outer.momentum = s.outer_momentum();
    plan.outer.beta2 = s.outer_beta2();
    if (!(s.outer_lr() > 0 && s.outer_lr() <= 10))
      return Bad("outer_lr", "must be in (0, 10], got " + Num(s.outer_lr()));
    if (!(s.outer_momentum() >= 0 && s.outer_momentum() < 1))
      return Bad("outer_momentum", "must be in [0, 1), got " + Num(s.outer_momentum()));
    if (!(s.outer_beta2() >= 0 && s.outer_beta2() < 1))
      return Bad("outer_beta2", "must be in [0, 1), got " + Num(s.outer_beta2()));
  }
  if (a == "dsgt") {
    // Gradient tracking (Pu and Nedic 2021) takes one gradient step per round
    // and applies it itself: local steps and momentum have no place in it.
    if (s.local_steps() != 1)
      return Bad("local_steps",
                 "dsgt takes one gradient step per round (got " + std::to_string(s.local_steps()) + ")");
    if (s.momentum() != 0)
      return Bad("momentum",
                 "dsgt applies its gradients itself and takes no momentum (got " + Num(s.momentum()) + ")");
    if (s.optimizer() != "sgd")
      return Bad("optimizer", "dsgt applies its gradients itself: sgd only (got " + s.optimizer() + ")");
  }
  if (a == "gossip-learning") {
    if (host == Host::kDaemon && time_varying)
      return Bad("topology",
                 "gossip learning on murmurd draws its peers from a static topology or complete, not '" +
                     s.topology() + "'");
    if (!(s.period() > 0 && s.period() <= 86400))
      return Bad("period", "must be in (0, 86400] seconds, got " + Num(s.period()));
    if (s.fanout() < 1 || (s.nodes() > 1 && s.fanout() > s.nodes() - 1))
      return Bad("fanout", "must be in [1, nodes - 1] (" + std::to_string(s.nodes() > 1 ? s.nodes() - 1 : 1) +
                               "), got " + std::to_string(s.fanout()));
  } else {
    // gossip learning draws its peers; the others mix over the topology.
    if (s.weights() != "default") {
      if (a == "push-sum")
        return Bad("weights", "push-sum mixes with column-stochastic weights of its own (got '" +
                                  s.weights() + "'); leave it at default");
      if (kind == "one-peer-exponential" || kind == "random-matching")
        return Bad("weights",
                   "'" + s.weights() + "' cannot apply to '" + kind +
                       "', whose rounds pair each node with one peer at weight 1/2; leave it at default");
      auto w = topology::ParseWeightOptions(s.weights());
      if (!w.ok()) return w.status().WithContext("spec field 'weights'");
    }
  }
  if (!(s.plausibility() >= 0 && s.plausibility() <= 1e6))
    return Bad("plausibility", "must be in [0, 1e6] (0: no bound), got " + Num(s.plausibility()));
  if (s.max_weight() != 0)
    return Bad("max_weight", "bounds federated results' weights; gossip mixes by the topology's weights");
  if (s.plausibility() != 10 && !dpsgd && a != "gossip-learning" && a != "push-sum" && a != "dsgt")
    return Bad("plausibility",
               "bounds the models that dpsgd, dpsgd-cta, diloco, gossip-learning, push-sum and dsgt mix; the "
               "all-reduce sums exact shares: leave it at its default");
  // Robust mixing and gossip attackers.
  if (dpsgd) {
    auto rule = gossip::ParseMixingRule(s.gossip_aggregation(), s.clip_suspects());
    if (!rule.ok()) return rule.status().WithContext("spec field 'gossip_aggregation'");
    plan.mixing = rule.value();
    plan.mixing.honest_majority = s.clip_honest_majority();
  }
  if (s.gossip_aggregation() != "mean") {
    if (!dpsgd)
      return Bad("gossip_aggregation",
                 "'" + s.gossip_aggregation() + "' needs algorithm dpsgd, dpsgd-cta or diloco");
    if (!codec->full_model_safe)
      return Bad("gossip_aggregation",
                 "'" + s.gossip_aggregation() +
                     "' mixes whole models; use compression none, fp16, bf16 or int8 (got '" + compression +
                     "')");
  }
  if (!(s.attack_fraction() >= 0 && s.attack_fraction() < 1))
    return Bad("attack_fraction", "must be in [0, 1)");
  if (s.attack_placement() != "members" && s.attack_placement() != "attached")
    return Bad("attack_placement", "'" + s.attack_placement() + "' is not one of members, attached");
  plan.placement =
      s.attack_placement() == "attached" ? AttackPlacement::kAttached : AttackPlacement::kMembers;
  auto attack = ParseGossipAttack(s.attack());
  if (!attack.ok()) return attack.status().WithContext("spec field 'attack'");
  plan.attack = attack.value();
  if (s.attackers_size() > 0)
    return Bad("attackers", "names federated clients; gossip attackers come from attack_fraction");
  if (s.attack() != "none" && s.attack_fraction() > 0) {
    if (!dpsgd) return Bad("attack", "gossip attackers need algorithm dpsgd, dpsgd-cta or diloco");
    if (host == Host::kDaemon)
      return Bad("attack",
                 "simulated gossip attackers run in the simulator only (" + a + " is a gossip job)");
    if (!codec->full_model_safe || time_varying)
      return Bad("attack",
                 "gossip attackers need whole models (compression none, fp16, bf16 or int8) on a static "
                 "topology (got '" +
                     compression + "' on '" + s.topology() + "')");
  }
  return Status::Ok();
}

}  // namespace murmur::engine::internal
