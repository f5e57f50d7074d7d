// The SecAgg+, DP-FedAvg and robust-rule options of a federated job, set as
// sim/federated_run.cc sets them for the scenario fields of the same names,
// except what makes them real on daemons (node/job/federated_job.h): secrets from
// the system's randomness, keys signed by the daemons' identities.
#include <cmath>

#include "node/job/federated_job.h"

namespace murmur::node {

namespace {

Nanos Seconds(double s) { return Nanos(static_cast<std::int64_t>(s * 1e9)); }

federated::SecAggParams SecAggParamsOf(const proto::JobConfig& j) {
  federated::SecAggParams p;
  p.neighbours = j.secagg_neighbours();
  p.threshold = j.secagg_threshold();
  p.quantizer.bits = static_cast<int>(j.secagg_bits());
  p.quantizer.range = j.secagg_range();
  return p;
}

}  // namespace

Status FillServerPrivacy(const proto::JobConfig& j, federated::ServerOptions* o) {
  MURMUR_ASSIGN_OR_RETURN(o->robust, federated::ParseRobustRule(j.robust()));
  // Without attackers the simulator's default f is 1; FillServerAttack sets it for attackers.
  o->robust.krum_f = j.krum_f() > 0 ? j.krum_f() : 1;
  o->dp_clip = j.dp_clip();
  o->dp_noise = j.dp_noise();
  o->dp_client_side = j.dp_side() == "client";
  o->dp_adaptive = j.dp_adaptive();
  o->adaptive.count_stddev = static_cast<double>(o->clients_per_round) / 20;  // Andrew et al.'s sigma_b
  o->epsilon_budget = j.epsilon_budget();
  o->dp_delta = j.dp_delta();
  if (j.secure_aggregation()) {
    o->secure_aggregation = true;
    o->secagg.params = SecAggParamsOf(j);
    o->secagg.deterministic_seed = false;  // the graph seed from randombytes
    o->secagg.key_timeout = Seconds(j.round_timeout());
    o->secagg.input_timeout = Seconds(j.deadline() > 0 ? j.deadline() : 600);
  }
  return Status::Ok();
}

void FillClientPrivacy(const proto::JobConfig& j, federated::ClientOptions* co) {
  if (j.dp_side() == "client" && j.dp_clip() > 0) {
    const std::uint32_t clients = j.nodes() - 1;
    const std::uint32_t k = j.clients_per_round() == 0 ? clients : j.clients_per_round();
    co->dp_clip = j.dp_clip();
    co->dp_noise_stddev = j.dp_noise() * j.dp_clip() / std::sqrt(static_cast<double>(k));
  }
  if (j.secure_aggregation()) {
    co->secagg.params = SecAggParamsOf(j);
    co->secagg.deterministic_secrets = false;  // X25519 keys, b_u, coins from randombytes
    co->secagg_dropout = j.secagg_dropout();
  }
}

}  // namespace murmur::node
