// The checks of a federated spec (PlanJob, engine/plan.h), filling its FederatedPlan.
#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "compression/compressor.h"
#include "engine/algorithms.h"
#include "engine/plan_parts.h"
#include "engine/topology.h"
#include "federated/secagg_quantizer.h"

namespace murmur::engine::internal {

namespace {

bool Finite(double x) { return std::isfinite(x); }

NodeId FederatedClients(const proto::JobSpec& s) {
  if (s.edge_aggregators() > 0 && s.edge_assignment() == "nearest-rsu")
    return s.nodes() - s.edge_aggregators();
  return s.nodes();
}

std::vector<bool> AttackersOf(const proto::JobSpec& s, federated::AttackKind kind, NodeId n) {
  if (kind == federated::AttackKind::kNone) return {};
  std::vector<bool> attacker(n, false);
  if (s.attackers_size() > 0) {
    for (std::uint32_t c : s.attackers()) attacker[c] = true;
    return attacker;
  }
  const auto count = static_cast<std::size_t>(std::llround(s.attack_fraction() * n));
  if (count == 0) return {};
  std::vector<NodeId> ids(n);
  for (NodeId i = 0; i < n; ++i) ids[i] = i;
  Rng rng(s.seed(), n, RngPurpose::kAttack);
  rng.Shuffle(std::span<NodeId>(ids));
  for (std::size_t i = 0; i < count; ++i) attacker[ids[i]] = true;
  return attacker;
}

Status CheckSecAgg(const proto::JobSpec& s, std::uint32_t k, bool mean) {
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

Status PlanAttack(const proto::JobSpec& s, Host host, FederatedPlan& plan) {
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
  plan.attack = kind.value();
  plan.attackers = AttackersOf(s, kind.value(), plan.clients);
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

}  // namespace

Status PlanFederated(const proto::JobSpec& s, Host host, FederatedPlan& plan) {
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
    if (s.edge_assignment() == "nearest-rsu")
      plan.edge_assignment = FederatedPlan::EdgeAssignment::kNearestRsu;
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
  plan.clients = clients;
  if (s.clients_per_round() > clients)
    return Bad("clients_per_round", std::to_string(s.clients_per_round()) + " is more than the " +
                                        std::to_string(clients) + " clients; 0 takes every client");
  plan.clients_per_round = s.clients_per_round() == 0 ? clients : s.clients_per_round();
  const auto k = static_cast<std::uint32_t>(plan.clients_per_round);
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
  plan.robust = robust.value();
  const bool mean = robust.value().rule == federated::AggregationRule::kMean;
  auto optimizer = federated::ParseServerOptimizer(a);  // fedavg, fedprox, scaffold and fedbuff: kFedAvg
  plan.optimizer = optimizer.ok() ? optimizer.value() : federated::ServerOptimizerKind::kFedAvg;
  if (s.gossip_aggregation() != "mean")
    return Bad("gossip_aggregation", "applies to gossip mixing; federated rounds aggregate with 'robust'");
  if (!(s.max_weight() >= 0 && std::isfinite(s.max_weight())))
    return Bad("max_weight",
               "must be a finite number >= 0 (0: the largest client share), got " + Num(s.max_weight()));
  if (!(s.plausibility() >= 0 && s.plausibility() <= 1e6))
    return Bad("plausibility", "must be in [0, 1e6] (0: no bound), got " + Num(s.plausibility()));
  MURMUR_RETURN_IF_ERROR(PlanAttack(s, host, plan));
  if (!(s.dp_clip() >= 0) || !Finite(s.dp_clip())) return Bad("dp_clip", "must be >= 0");
  if (!(s.dp_noise() >= 0) || !Finite(s.dp_noise())) return Bad("dp_noise", "must be >= 0");
  if (s.dp_side() != "server" && s.dp_side() != "client") return Bad("dp_side", "must be server or client");
  plan.dp_client_side = s.dp_side() == "client";
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
  plan.selection = sel.value();
  if (s.upload_compression() != "none") {
    auto c = compression::MakeCompressor(s.upload_compression());
    if (!c.ok()) return c.status().WithContext("spec field 'upload_compression'");
    plan.upload = std::move(c).value();
  }
  if (s.broadcast_compression() != "none") {
    auto c = gossip::CodecSpec::Parse(s.broadcast_compression());
    if (!c.ok()) return c.status().WithContext("spec field 'broadcast_compression'");
    if (!c.value().full_model_safe) return Bad("broadcast_compression", "must be none, fp16, bf16 or int8");
    plan.broadcast = c.value().compressor;
  }
  if (s.secure_aggregation()) MURMUR_RETURN_IF_ERROR(CheckSecAgg(s, k, mean));
  if (TopologyKind(s.topology()) == "vehicles" && host == Host::kDaemon)
    return Bad("topology", "vehicles (contact graphs of simulated cars) exists in the simulator only");
  return Status::Ok();
}

}  // namespace murmur::engine::internal
