#include "engine/federated_builder.h"

#include <algorithm>
#include <cmath>

#include "federated/aggregation.h"
#include "federated/attack.h"
#include "federated/selection.h"
#include "federated/strategy.h"
#include "gossip/codec.h"

namespace murmur::engine {

namespace {

federated::SecAggParams SecAggParamsOf(const proto::JobSpec& s) {
  federated::SecAggParams p;
  p.neighbours = s.secagg_neighbours();
  p.threshold = s.secagg_threshold();
  p.quantizer.bits = static_cast<int>(s.secagg_bits());
  p.quantizer.range = s.secagg_range();
  return p;
}

// Attackers over the clients, for Krum's default f (attackers expected per round).
double AttackFraction(const proto::JobSpec& s) {
  if (s.attackers_size() > 0) return static_cast<double>(s.attackers_size()) / FederatedClients(s);
  return s.attack_fraction();
}

}  // namespace

NodeId FederatedClients(const proto::JobSpec& s) {
  if (s.edge_aggregators() > 0 && s.edge_assignment() == "nearest-rsu")
    return s.nodes() - s.edge_aggregators();
  return s.nodes();
}

std::size_t ClientsPerRound(const proto::JobSpec& s) {
  return s.clients_per_round() == 0 ? FederatedClients(s) : s.clients_per_round();
}

std::vector<bool> AttackersOf(const proto::JobSpec& s) {
  const auto kind = federated::ParseAttack(s.attack());
  if (!kind.ok() || kind.value() == federated::AttackKind::kNone) return {};
  const NodeId n = FederatedClients(s);
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

bool FlipsLabels(const proto::JobSpec& s, NodeId index) {
  if (s.attack() != "label-flip") return false;
  const std::vector<bool> attacker = AttackersOf(s);
  return index < attacker.size() && attacker[index];
}

Result<std::shared_ptr<const compression::Compressor>> UploadCompressor(const proto::JobSpec& s) {
  if (s.upload_compression() == "none") return std::shared_ptr<const compression::Compressor>();
  auto made = compression::MakeCompressor(s.upload_compression());
  if (!made.ok()) return made.status().WithContext("spec field 'upload_compression'");
  return std::shared_ptr<const compression::Compressor>(std::move(made).value());
}

Result<federated::ServerOptions> MakeServerOptions(const proto::JobSpec& s, const FederatedHost& host) {
  const std::string& a = s.algorithm();
  federated::ServerOptions o;
  o.num_clients = FederatedClients(s);
  o.rounds = s.rounds();
  o.clients_per_round = ClientsPerRound(s);
  o.over_commit = s.over_commit();
  o.deadline = FromSeconds(s.deadline());
  o.min_results = s.min_clients();
  o.partial_work = s.partial_work();
  o.fednova = s.fednova();
  o.scaffold = a == "scaffold";
  o.async = a == "fedbuff";
  o.concurrency = s.fedbuff_concurrency();
  o.buffer = s.fedbuff_buffer();
  MURMUR_ASSIGN_OR_RETURN(o.selection.kind, federated::ParseSelection(s.selection()));
  auto kind = federated::ParseServerOptimizer(a);
  o.optimizer.kind = kind.ok() ? kind.value() : federated::ServerOptimizerKind::kFedAvg;
  o.optimizer.lr = s.server_lr() > 0 ? s.server_lr() : federated::DefaultServerLr(o.optimizer.kind);
  o.optimizer.momentum = s.server_momentum();
  o.optimizer.nesterov = s.server_nesterov();
  o.optimizer.beta1 = s.server_beta1();
  o.optimizer.beta2 = s.server_beta2();
  o.optimizer.tau = s.server_tau();
  MURMUR_ASSIGN_OR_RETURN(o.robust, federated::ParseRobustRule(s.robust()));
  // Attacks: the server holds the round's updates whenever an attack poisons
  // them (so that honest updates are aggregated the same way in both hosts).
  MURMUR_ASSIGN_OR_RETURN(federated::AttackKind attack, federated::ParseAttack(s.attack()));
  const std::vector<bool> attackers = AttackersOf(s);
  o.attack_scale = s.attack_scale();
  if (!host.clients_attack) {
    o.attack = attack;
    o.attacker = attackers;
  } else if (federated::PoisonsUpdates(attack)) {
    // Sign-flip and gaussian attackers have rewritten their updates already:
    // for the server they are no one's; it plays ALIE and IPM.
    o.attack = attack;
    if (attack == federated::AttackKind::kAlie || attack == federated::AttackKind::kIpm)
      o.attacker = attackers;
  }
  const double expected_bad = AttackFraction(s) * static_cast<double>(o.clients_per_round);
  o.robust.krum_f = s.krum_f() > 0 ? s.krum_f() : std::max<std::size_t>(1, std::llround(expected_bad));
  o.dp_clip = s.dp_clip();
  o.dp_noise = s.dp_noise();
  o.dp_client_side = s.dp_side() == "client";
  o.dp_adaptive = s.dp_adaptive();
  o.adaptive.count_stddev = static_cast<double>(o.clients_per_round) / 20;  // Andrew et al.'s sigma_b
  o.epsilon_budget = s.epsilon_budget();
  o.dp_delta = s.dp_delta();
  if (s.broadcast_compression() != "none") {
    auto codec = gossip::CodecSpec::Parse(s.broadcast_compression());
    if (!codec.ok()) return codec.status().WithContext("spec field 'broadcast_compression'");
    o.broadcast = codec->compressor;
  }
  // Lossless both ways and no DP: clients return models, and FedAvg is exact.
  o.request_model = s.upload_compression() == "none" && !o.broadcast && o.dp_clip == 0;
  if (s.secure_aggregation()) {
    o.secure_aggregation = true;
    o.secagg.params = SecAggParamsOf(s);
    o.secagg.deterministic_seed = !host.real_secrets;
    o.secagg.key_timeout = FromSeconds(s.secagg_timeout());
    o.secagg.input_timeout = FromSeconds(s.deadline() > 0 ? s.deadline() : 600);
  }
  return o;
}

Result<federated::ClientOptions> MakeClientOptions(const proto::JobSpec& s, NodeId index, double num_samples,
                                                   double max_samples, const FederatedHost& host) {
  federated::ClientOptions co;
  co.local_steps = s.local_epochs() > 0 ? 0 : static_cast<int>(s.local_steps());
  co.local_epochs = s.local_epochs();
  co.batch = static_cast<int>(s.batch());
  co.num_samples = num_samples;
  co.prox_mu = s.algorithm() == "fedprox" ? s.prox_mu() : 0.0;
  co.scaffold = s.algorithm() == "scaffold";
  co.local_buffers = s.model_buffers() == "local";
  MURMUR_ASSIGN_OR_RETURN(co.upload, UploadCompressor(s));
  if (s.dp_side() == "client" && s.dp_clip() > 0) {
    co.dp_clip = s.dp_clip();
    co.dp_noise_stddev = s.dp_noise() * s.dp_clip() / std::sqrt(static_cast<double>(ClientsPerRound(s)));
  }
  if (s.secure_aggregation()) {
    co.secagg.params = SecAggParamsOf(s);
    co.secagg.deterministic_secrets = !host.real_secrets;
    co.secagg_weight_scale = max_samples;
    co.secagg_dropout = s.secagg_dropout();
  }
  if (host.clients_attack) {
    const std::vector<bool> attackers = AttackersOf(s);
    const auto kind = federated::ParseAttack(s.attack());
    if (kind.ok() && index < attackers.size() && attackers[index] &&
        (kind.value() == federated::AttackKind::kSignFlip ||
         kind.value() == federated::AttackKind::kGaussian)) {
      co.attack = kind.value();
      co.attack_scale = s.attack_scale();
    }
  }
  return co;
}

}  // namespace murmur::engine
