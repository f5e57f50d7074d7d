#include "node/job/federated_job.h"

#include <algorithm>
#include <cmath>

#include "compression/compressor.h"
#include "federated/aggregation.h"
#include "federated/secagg_quantizer.h"
#include "federated/selection.h"
#include "ml/dataset_spec.h"

namespace murmur::node {

namespace {

constexpr const char* kAlgorithms[] = {"fedavg",  "fedprox", "scaffold",   "fedavgm",
                                       "fedadam", "fedyogi", "fedadagrad", "fedbuff"};

}  // namespace

bool IsFederatedJob(const std::string& algorithm) {
  return std::any_of(std::begin(kAlgorithms), std::end(kAlgorithms),
                     [&](const char* a) { return algorithm == a; });
}

Status ValidateFederatedJob(const proto::JobConfig& j, NodeId self) {
  (void)self;
  auto bad = [](const std::string& field, const std::string& why) {
    return Status::InvalidArgument("job field '" + field + "' " + why);
  };
  if (!IsFederatedJob(j.algorithm()))
    return bad("algorithm", "'" + j.algorithm() +
                                "' is not one of fedavg, fedprox, scaffold, fedavgm, fedadam, fedyogi, "
                                "fedadagrad, fedbuff");
  if (j.lr_schedule() != "constant")
    return bad("lr_schedule", "applies to gossip jobs only (got '" + j.lr_schedule() + "')");
  if (j.aggregator() >= j.nodes())
    return bad("aggregator",
               std::to_string(j.aggregator()) + " is not below job.nodes " + std::to_string(j.nodes()));
  const std::uint32_t clients = j.nodes() - 1;
  MURMUR_RETURN_IF_ERROR(ml::CheckPartitionSpec(j.partition()).WithContext("job field 'partition'"));
  if (j.clients_per_round() > clients)
    return bad("clients_per_round", std::to_string(j.clients_per_round()) + " is more than the " +
                                        std::to_string(clients) + " clients (0: all)");
  if (j.min_clients() < 1 || j.min_clients() > clients)
    return bad("min_clients", "must be in [1, " + std::to_string(clients) + "]");
  if (j.rounds() < 1) return bad("rounds", "must be at least 1");
  if (j.checkpoint_every() < 1) return bad("checkpoint_every", "must be at least 1");
  if (j.batch() < 1 || j.batch() > 65536) return bad("batch", "must be in [1, 65536]");
  if (!(j.lr() > 0) || !std::isfinite(j.lr())) return bad("lr", "must be a positive number");
  if (!(j.local_epochs() >= 0 && j.local_epochs() <= 1000))
    return bad("local_epochs", "must be in [0, 1000]");
  if (j.local_steps() < 1) return bad("local_steps", "must be at least 1");
  if (!(j.prox_mu() >= 0)) return bad("prox_mu", "must be >= 0");
  if (!(j.server_lr() >= 0) || !std::isfinite(j.server_lr())) return bad("server_lr", "must be >= 0");
  if (!(j.server_momentum() >= 0 && j.server_momentum() < 1))
    return bad("server_momentum", "must be in [0, 1)");
  if (!(j.server_beta1() >= 0 && j.server_beta1() < 1)) return bad("server_beta1", "must be in [0, 1)");
  if (!(j.server_beta2() >= 0 && j.server_beta2() < 1)) return bad("server_beta2", "must be in [0, 1)");
  if (!(j.server_tau() > 0)) return bad("server_tau", "must be > 0");
  if (!(j.momentum() >= 0 && j.momentum() < 1)) return bad("momentum", "must be in [0, 1)");
  if (!(j.weight_decay() >= 0)) return bad("weight_decay", "must be >= 0");
  if (!(j.deadline() >= 0 && j.deadline() <= 86400)) return bad("deadline", "must be in [0, 86400] seconds");
  if (!(j.over_commit() >= 1 && j.over_commit() <= 10)) return bad("over_commit", "must be in [1, 10]");
  if (!(j.join_timeout() > 0 && j.join_timeout() <= 86400))
    return bad("join_timeout", "must be in (0, 86400] seconds");
  auto sel = federated::ParseSelection(j.selection());
  if (!sel.ok()) return sel.status().WithContext("job field 'selection'");
  if (j.upload_compression() != "none") {
    auto c = compression::MakeCompressor(j.upload_compression());
    if (!c.ok()) return c.status().WithContext("job field 'upload_compression'");
  }
  MURMUR_RETURN_IF_ERROR(ValidateFederatedPrivacy(j));
  return ValidateFederatedAttack(j);
}

// The refusals of sim::ValidateFederatedScenario for the same fields.
Status ValidateFederatedPrivacy(const proto::JobConfig& j) {
  auto bad = [](const std::string& field, const std::string& why) {
    return Status::InvalidArgument("job field '" + field + "' " + why);
  };
  auto robust = federated::ParseRobustRule(j.robust());
  if (!robust.ok()) return robust.status().WithContext("job field 'robust'");
  const bool mean = robust.value().rule == federated::AggregationRule::kMean;
  if (!(j.dp_clip() >= 0) || !std::isfinite(j.dp_clip())) return bad("dp_clip", "must be >= 0");
  if (!(j.dp_noise() >= 0) || !std::isfinite(j.dp_noise())) return bad("dp_noise", "must be >= 0");
  if (j.dp_side() != "server" && j.dp_side() != "client") return bad("dp_side", "must be server or client");
  if (j.dp_noise() > 0 && j.dp_clip() == 0) return bad("dp_noise", "needs dp_clip > 0");
  if (j.dp_clip() > 0 && (!mean || j.algorithm() == "fedbuff"))
    return bad("dp_clip", "DP-FedAvg works with robust = mean and synchronous rounds");
  if (!(j.epsilon_budget() >= 0)) return bad("epsilon_budget", "must be >= 0");
  if (!(j.dp_delta() > 0 && j.dp_delta() < 1)) return bad("dp_delta", "must be in (0, 1)");
  if (!j.secure_aggregation()) return Status::Ok();
  const std::string& a = j.algorithm();
  const std::uint32_t clients = j.nodes() - 1;
  const std::uint32_t k = j.clients_per_round() == 0 ? clients : j.clients_per_round();
  if (a == "scaffold" || a == "fedbuff")
    return bad("secure_aggregation", "works with synchronous FedAvg-family rounds, not " + a);
  if (!mean) return bad("secure_aggregation", "needs robust = mean (the aggregator sees only the sum)");
  if (j.dp_clip() > 0) return bad("secure_aggregation", "does not combine with DP-FedAvg here");
  if (j.upload_compression() != "none") return bad("secure_aggregation", "needs upload_compression = none");
  if (k < 3) return bad("clients_per_round", "must be at least 3 with secure_aggregation");
  if (j.secagg_neighbours() % 2 != 0) return bad("secagg_neighbours", "must be even (or 0 for all)");
  if (!(j.secagg_threshold() >= 0 && j.secagg_threshold() <= 1))
    return bad("secagg_threshold", "must be in [0, 1]");
  if (!(j.secagg_dropout() >= 0 && j.secagg_dropout() < 1)) return bad("secagg_dropout", "must be in [0, 1)");
  if (!(j.round_timeout() > 0 && j.round_timeout() <= 86400))
    return bad("round_timeout", "(the SecAgg+ key-stage timeout) must be in (0, 86400] seconds");
  federated::QuantizerOptions q;
  q.bits = static_cast<int>(std::min<std::uint32_t>(j.secagg_bits(), 64));
  q.range = j.secagg_range();
  const auto max_clients = static_cast<std::size_t>(std::ceil(j.over_commit() * k));
  Status st = federated::SecAggQuantizer::Check(q, max_clients);
  if (!st.ok()) return st.WithContext("job fields 'secagg_bits', 'secagg_range'");
  return Status::Ok();
}

}  // namespace murmur::node
