#include "engine/validate.h"

#include <cmath>
#include <set>
#include <string>

#include "compression/compressor.h"
#include "engine/algorithms.h"
#include "engine/federated_builder.h"
#include "engine/gossip_builder.h"
#include "engine/topology.h"
#include "federated/aggregation.h"
#include "federated/attack.h"
#include "federated/secagg_quantizer.h"
#include "federated/selection.h"
#include "gossip/codec.h"
#include "gossip/collective_schedule.h"
#include "gossip/robust_mixing.h"
#include "ml/dataset_spec.h"
#include "ml/schedule.h"
#include "ml/torch/torchscript_model.h"

namespace murmur::engine {

namespace {

Status Bad(const std::string& field, const std::string& why) {
  return Status::InvalidArgument("spec field '" + field + "' " + why);
}

bool Finite(double x) { return std::isfinite(x); }
std::string Num(double x) {
  std::string s = std::to_string(x);
  while (s.size() > 1 && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

// The fields every spec has.
Status ValidateCommon(const proto::JobSpec& s) {
  const bool federated = IsFederatedAlgorithm(s.algorithm());
  if (!federated && !IsGossipAlgorithm(s.algorithm()))
    return Bad("algorithm", "'" + s.algorithm() + "' is not one of " + AlgorithmList());
  if (s.algorithm() != "diloco" && s.algorithm() != "diloco-allreduce") {
    // DiLoCo's outer step exists only in DiLoCo: a value other than the
    // default elsewhere would be silently ignored, so it is refused (as
    // groups, overlap and collective are outside the all-reduce).
    const proto::JobSpec defaults;
    const std::string applies = "applies to diloco and diloco-allreduce (got " + s.algorithm() + ")";
    if (s.outer_optimizer() != defaults.outer_optimizer()) return Bad("outer_optimizer", applies);
    if (s.outer_lr() != defaults.outer_lr()) return Bad("outer_lr", applies);
    if (s.outer_momentum() != defaults.outer_momentum()) return Bad("outer_momentum", applies);
    if (s.outer_beta2() != defaults.outer_beta2()) return Bad("outer_beta2", applies);
  }
  if (federated) {
    if (s.nodes() < 1 || s.nodes() > kMaxFederatedClients)
      return Bad("nodes", "must be in [1, " + std::to_string(kMaxFederatedClients) + "] clients, got " +
                              std::to_string(s.nodes()));
  } else if (s.nodes() < 2 || s.nodes() > kMaxGossipNodes) {
    return Bad("nodes", "must be in [2, " + std::to_string(kMaxGossipNodes) + "], got " +
                            std::to_string(s.nodes()) +
                            " (gossip needs 2 nodes; one model alone is `murmur train`)");
  }
  MURMUR_RETURN_IF_ERROR(ml::CheckPartitionSpec(s.partition()).WithContext("spec field 'partition'"));
  if (!s.model_blake2b().empty()) {
    if (!ml::IsTorchScriptSpec(s.model()))
      return Bad("model_blake2b", "applies to torchscript: models only (the model is '" + s.model() + "')");
    if (s.model_blake2b().size() != 128 ||
        s.model_blake2b().find_first_not_of("0123456789abcdef") != std::string::npos)
      return Bad("model_blake2b",
                 "must be 128 lowercase hex digits (b2sum FILE), got '" + s.model_blake2b() + "'");
  }
  if (s.model_buffers() != "average" && s.model_buffers() != "local")
    return Bad("model_buffers", "must be average or local, got '" + s.model_buffers() + "'");
  // Gossip algorithms that send running sums, trackers or aged models do not mix models whole.
  const std::string& a = s.algorithm();
  if (s.model_buffers() == "local" && IsGossipAlgorithm(a) && !IsDpsgd(a) && !IsRingAllReduce(a))
    return Bad("model_buffers",
               "local buffers need an algorithm that averages models (dpsgd, dpsgd-cta, diloco, "
               "allreduce, diloco-allreduce or a federated one), not " +
                   s.algorithm());
  if (s.rounds() < 1) return Bad("rounds", "must be at least 1");
  if (s.local_steps() < 1 || s.local_steps() > 100000) return Bad("local_steps", "must be in [1, 100000]");
  if (s.batch() < 1 || s.batch() > 65536) return Bad("batch", "must be in [1, 65536]");
  if (!(s.lr() > 0) || !Finite(s.lr())) return Bad("lr", "must be a positive number");
  if (!(s.momentum() >= 0 && s.momentum() < 1))
    return Bad("momentum", "must be in [0, 1), got " + Num(s.momentum()));
  if (!(s.weight_decay() >= 0) || !Finite(s.weight_decay()))
    return Bad("weight_decay", "must be >= 0, got " + Num(s.weight_decay()));
  if (s.optimizer() != "sgd" && s.optimizer() != "adamw")
    return Bad("optimizer", "must be sgd or adamw, got '" + s.optimizer() + "'");
  if (s.optimizer() == "adamw" && s.momentum() != 0)
    return Bad("momentum", "is SGD's; adamw has adam_beta1 (got momentum " + Num(s.momentum()) + ")");
  if (!(s.adam_beta1() >= 0 && s.adam_beta1() < 1))
    return Bad("adam_beta1", "must be in [0, 1), got " + Num(s.adam_beta1()));
  if (!(s.adam_beta2() >= 0 && s.adam_beta2() < 1))
    return Bad("adam_beta2", "must be in [0, 1), got " + Num(s.adam_beta2()));
  if (s.lr_schedule() != "constant" && federated)
    return Bad("lr_schedule", "applies to gossip algorithms only (got '" + s.lr_schedule() + "' with " +
                                  s.algorithm() + ")");
  MURMUR_RETURN_IF_ERROR(
      ml::ParseRoundSchedule(s.lr_schedule(), s.lr(), s.lr_min(), s.rounds(), s.local_steps(), "spec")
          .status());
  if (!(s.round_timeout() >= 0 && s.round_timeout() <= 86400))
    return Bad("round_timeout",
               "must be in [0, 86400] seconds (0: fitted to the host), got " + Num(s.round_timeout()));
  if (!(s.round_period() >= 0 && s.round_period() <= 86400))
    return Bad("round_period",
               "must be in [0, 86400] seconds (0: no round clock), got " + Num(s.round_period()));
  if (s.round_period() > 0 && !IsDpsgd(s.algorithm()))
    return Bad("round_period", "is for the D-PSGD family (dpsgd, dpsgd-cta, diloco), not " + s.algorithm());
  return Status::Ok();
}

Status ValidateGossip(const proto::JobSpec& s, Host host) {
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
  const std::string compression = CompressionOf(s);
  auto codec = GossipCodecOf(s);
  if (!codec.ok()) return codec.status();
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
  if (!codec->full_model_safe && IsTimeVarying(s.topology())) {
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
    MURMUR_RETURN_IF_ERROR(ParseOuterOptimizer(s.outer_optimizer()).status());
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
    if (host == Host::kDaemon && IsTimeVarying(s.topology()))
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
  if (s.plausibility() != 10 && !dpsgd)
    return Bad("plausibility",
               "bounds the whole models of dpsgd, dpsgd-cta and diloco; leave it at its default");
  // Robust mixing and gossip attackers.
  if (s.gossip_aggregation() != "mean") {
    if (!dpsgd)
      return Bad("gossip_aggregation",
                 "'" + s.gossip_aggregation() + "' needs algorithm dpsgd, dpsgd-cta or diloco");
    auto rule = gossip::ParseMixingRule(s.gossip_aggregation(), s.clip_suspects());
    if (!rule.ok()) return rule.status().WithContext("spec field 'gossip_aggregation'");
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
  if (s.attackers_size() > 0)
    return Bad("attackers", "names federated clients; gossip attackers come from attack_fraction");
  if (s.attack() != "none" && s.attack_fraction() > 0) {
    if (!dpsgd) return Bad("attack", "gossip attackers need algorithm dpsgd, dpsgd-cta or diloco");
    if (host == Host::kDaemon)
      return Bad("attack",
                 "simulated gossip attackers run in the simulator only (" + a + " is a gossip job)");
    if (!codec->full_model_safe || IsTimeVarying(s.topology()))
      return Bad("attack",
                 "gossip attackers need whole models (compression none, fp16, bf16 or int8) on a static "
                 "topology (got '" +
                     compression + "' on '" + s.topology() + "')");
  }
  return Status::Ok();
}

Status ValidateSecAgg(const proto::JobSpec& s, std::uint32_t k, bool mean) {
  const std::string& a = s.algorithm();
  if (a == "scaffold" || a == "fedbuff")
    return Bad("secure_aggregation", "works with synchronous FedAvg-family rounds, not " + a);
  if (!mean) return Bad("secure_aggregation", "needs robust = mean (the server sees only the sum)");
  if (s.dp_clip() > 0) return Bad("secure_aggregation", "does not combine with DP-FedAvg here");
  if (s.fednova()) return Bad("secure_aggregation", "does not combine with fednova");
  if (s.upload_compression() != "none") return Bad("secure_aggregation", "needs upload_compression = none");
  if (s.broadcast_compression() != "none")
    return Bad("secure_aggregation", "needs broadcast_compression = none");
  if (s.attack() != "none") return Bad("secure_aggregation", "needs attack = none");
  if (s.edge_aggregators() > 0)
    return Bad("secure_aggregation", "runs between clients and one server, not through edge aggregators");
  if (k < 3) return Bad("clients_per_round", "must be at least 3 with secure_aggregation");
  if (s.secagg_neighbours() % 2 != 0) return Bad("secagg_neighbours", "must be even (or 0 for all)");
  if (!(s.secagg_threshold() >= 0 && s.secagg_threshold() <= 1))
    return Bad("secagg_threshold", "must be in [0, 1]");
  if (!(s.secagg_dropout() >= 0 && s.secagg_dropout() < 1)) return Bad("secagg_dropout", "must be in [0, 1)");
  if (!(s.secagg_timeout() > 0 && s.secagg_timeout() <= 86400))
    return Bad("secagg_timeout", "must be in (0, 86400] seconds");
  federated::QuantizerOptions q;
  q.bits = static_cast<int>(std::min<std::uint32_t>(s.secagg_bits(), 64));
  q.range = s.secagg_range();
  const auto max_clients = static_cast<std::size_t>(std::ceil(s.over_commit() * k));
  Status st = federated::SecAggQuantizer::Check(q, max_clients);
  if (!st.ok()) return st.WithContext("spec fields 'secagg_bits', 'secagg_range'");
  return Status::Ok();
}

Status ValidateAttack(const proto::JobSpec& s, Host host) {
  auto kind = federated::ParseAttack(s.attack());
  if (!kind.ok()) return kind.status().WithContext("spec field 'attack'");
  if (!(s.attack_fraction() >= 0 && s.attack_fraction() < 1))
    return Bad("attack_fraction", "must be in [0, 1)");
  if (!(s.attack_scale() > 0) || !Finite(s.attack_scale()))
    return Bad("attack_scale", "must be a positive number");
  if (s.attack_placement() != "members")
    return Bad("attack_placement", "places gossip attackers; federated attackers are clients");
  if (s.attackers_size() > 0) {
    if (s.attack_fraction() > 0)
      return Bad("attackers", "and attack_fraction both choose the attackers: set one of them");
    const NodeId clients = FederatedClients(s);
    if (s.attackers_size() >= static_cast<int>(clients))
      return Bad("attackers", "names " + std::to_string(s.attackers_size()) + " of the " +
                                  std::to_string(clients) + " clients: at least one must be honest");
    std::set<std::uint32_t> seen;
    for (std::uint32_t c : s.attackers()) {
      if (c >= clients)
        return Bad("attackers", "client " + std::to_string(c) + " is not below the " +
                                    std::to_string(clients) + " clients");
      if (!seen.insert(c).second) return Bad("attackers", "names client " + std::to_string(c) + " twice");
    }
  }
  if (kind.value() == federated::AttackKind::kNone) return Status::Ok();
  if (host == Host::kDaemon && federated::PoisonsUpdates(kind.value())) {
    // An attacker daemon sends its poisoned update itself (or the aggregator
    // plays ALIE and IPM): what the simulator's server does in one place.
    if (s.algorithm() == "fedbuff")
      return Bad("attack",
                 "'" + s.attack() + "' runs in synchronous rounds on daemons, not fedbuff (label-flip does)");
    if (s.dp_clip() > 0)
      return Bad("attack", "'" + s.attack() + "' does not combine with DP-FedAvg on daemons");
    if (s.upload_compression() != "none")
      return Bad("attack", "'" + s.attack() + "' needs upload_compression = none on daemons");
  }
  return Status::Ok();
}

Status ValidateFederated(const proto::JobSpec& s, Host host) {
  const std::string& a = s.algorithm();
  // `compression` is the gossip compressor: a federated run that named one
  // would send uncompressed uploads under a compressed label.
  if (s.compression() != "default" && s.compression() != "none")
    return Bad("compression",
               "is the gossip compressor; a federated job compresses its uploads with "
               "upload_compression (got '" +
                   s.compression() + "' with " + a + ")");
  // Edge aggregators (hierarchical FL); nearest-rsu also needs the simulated
  // vehicles, which the scenario checks.
  if (const std::uint32_t e = s.edge_aggregators(); e > 0) {
    if (host == Host::kDaemon)
      return Bad("edge_aggregators", "hierarchical aggregation runs in the simulator only (murmurd: 0)");
    if (s.edge_assignment() != "id" && s.edge_assignment() != "nearest-rsu")
      return Bad("edge_assignment", "'" + s.edge_assignment() + "' is not id or nearest-rsu");
    if (s.edge_assignment() == "nearest-rsu") {
      if (e >= s.nodes()) return Bad("edge_aggregators", "must be fewer than nodes (the RSUs are nodes)");
    } else if (e > s.nodes()) {
      return Bad("edge_aggregators", "must be at most nodes (" + std::to_string(s.nodes()) + ")");
    }
    if (a == "scaffold" || a == "fedbuff")
      return Bad("edge_aggregators", "works with synchronous rounds without SCAFFOLD, not " + a);
    if (s.dp_clip() > 0) return Bad("edge_aggregators", "does not combine with DP-FedAvg (dp_clip)");
  }
  const NodeId clients = FederatedClients(s);
  if (s.clients_per_round() > clients)
    return Bad("clients_per_round", std::to_string(s.clients_per_round()) + " is more than the " +
                                        std::to_string(clients) + " clients; 0 takes every client");
  const auto k = static_cast<std::uint32_t>(ClientsPerRound(s));
  if (s.min_clients() < 1 || s.min_clients() > k)
    return Bad("min_clients", "must be in [1, " + std::to_string(k) + "] (clients_per_round), got " +
                                  std::to_string(s.min_clients()));
  if (!(s.local_epochs() >= 0 && s.local_epochs() <= 1000))
    return Bad("local_epochs", "must be in [0, 1000]");
  if (!(s.prox_mu() >= 0) || !Finite(s.prox_mu())) return Bad("prox_mu", "must be >= 0");
  if (!(s.server_lr() >= 0) || !Finite(s.server_lr())) return Bad("server_lr", "must be >= 0");
  if (!(s.server_momentum() >= 0 && s.server_momentum() < 1))
    return Bad("server_momentum", "must be in [0, 1)");
  if (!(s.server_beta1() >= 0 && s.server_beta1() < 1)) return Bad("server_beta1", "must be in [0, 1)");
  if (!(s.server_beta2() >= 0 && s.server_beta2() < 1)) return Bad("server_beta2", "must be in [0, 1)");
  if (!(s.server_tau() > 0) || !Finite(s.server_tau())) return Bad("server_tau", "must be > 0");
  auto robust = federated::ParseRobustRule(s.robust());
  if (!robust.ok()) return robust.status().WithContext("spec field 'robust'");
  const bool mean = robust.value().rule == federated::AggregationRule::kMean;
  if (s.gossip_aggregation() != "mean")
    return Bad("gossip_aggregation", "applies to gossip mixing; federated rounds aggregate with 'robust'");
  if (!(s.max_weight() >= 0 && std::isfinite(s.max_weight())))
    return Bad("max_weight",
               "must be a finite number >= 0 (0: the largest client share), got " + Num(s.max_weight()));
  if (s.plausibility() != 10)
    return Bad("plausibility",
               "bounds gossip mixing's whole models; federated results are bounded by "
               "the server's own checks (docs/security.md, Insiders)");
  MURMUR_RETURN_IF_ERROR(ValidateAttack(s, host));
  if (!(s.dp_clip() >= 0) || !Finite(s.dp_clip())) return Bad("dp_clip", "must be >= 0");
  if (!(s.dp_noise() >= 0) || !Finite(s.dp_noise())) return Bad("dp_noise", "must be >= 0");
  if (s.dp_side() != "server" && s.dp_side() != "client") return Bad("dp_side", "must be server or client");
  if (s.dp_noise() > 0 && s.dp_clip() == 0) return Bad("dp_noise", "needs dp_clip > 0");
  if (s.dp_clip() > 0 && (!mean || a == "fedbuff"))
    return Bad("dp_clip", "DP-FedAvg works with robust = mean and synchronous rounds");
  if (!(s.epsilon_budget() >= 0) || !Finite(s.epsilon_budget())) return Bad("epsilon_budget", "must be >= 0");
  if (!(s.dp_delta() > 0 && s.dp_delta() < 1)) return Bad("dp_delta", "must be in (0, 1)");
  if (!(s.deadline() >= 0 && s.deadline() <= 86400)) return Bad("deadline", "must be in [0, 86400] seconds");
  if (!(s.over_commit() >= 1 && s.over_commit() <= 10)) return Bad("over_commit", "must be in [1, 10]");
  if (s.partial_work() && s.deadline() == 0) return Bad("partial_work", "needs a deadline");
  auto sel = federated::ParseSelection(s.selection());
  if (!sel.ok()) return sel.status().WithContext("spec field 'selection'");
  if (s.upload_compression() != "none") {
    auto c = compression::MakeCompressor(s.upload_compression());
    if (!c.ok()) return c.status().WithContext("spec field 'upload_compression'");
  }
  if (s.broadcast_compression() != "none") {
    auto c = gossip::CodecSpec::Parse(s.broadcast_compression());
    if (!c.ok()) return c.status().WithContext("spec field 'broadcast_compression'");
    if (!c.value().full_model_safe) return Bad("broadcast_compression", "must be none, fp16, bf16 or int8");
  }
  if (s.secure_aggregation()) MURMUR_RETURN_IF_ERROR(ValidateSecAgg(s, k, mean));
  if (TopologyKind(s.topology()) == "vehicles" && host == Host::kDaemon)
    return Bad("topology", "vehicles (contact graphs of simulated cars) exists in the simulator only");
  return Status::Ok();
}

}  // namespace

Status ValidateJobSpec(const proto::JobSpec& spec, Host host) {
  MURMUR_RETURN_IF_ERROR(ValidateCommon(spec));
  if (IsFederatedAlgorithm(spec.algorithm())) return ValidateFederated(spec, host);
  return ValidateGossip(spec, host);
}

}  // namespace murmur::engine
