// Simulated attackers in a federated job (proto/node.proto fields 63-66;
// docs/daemon.md "Simulated attacks"): which clients attack, checked and
// chosen as sim/federated_run.cc chooses them for the scenario fields of the
// same names, and where each kind runs on daemons:
//
//   sign-flip, gaussian  the attacker daemon rewrites its own update
//                        (federated/client.h, ClientOptions::attack)
//   label-flip           the attacker daemon trains on labels y -> C - 1 - y
//   alie, ipm            the aggregator rewrites the attackers' updates, as
//                        the simulator's server does: these attackers are
//                        omniscient (they need every honest update of the
//                        round), and only the aggregator holds those
#include <algorithm>
#include <cmath>
#include <set>

#include "node/job/federated_job.h"
#include "node/job/index_env.h"

namespace murmur::node {

namespace {

Status Bad(const std::string& field, const std::string& why) {
  return Status::InvalidArgument("job field '" + field + "' " + why);
}

// Attackers over the round's K, for Krum's default f (sim/federated_run.cc: attack_fraction K).
double AttackFraction(const proto::JobConfig& j) {
  const std::uint32_t clients = j.nodes() - 1;
  if (j.attackers_size() > 0) return static_cast<double>(j.attackers_size()) / clients;
  return j.attack_fraction();
}

}  // namespace

Status ValidateFederatedAttack(const proto::JobConfig& j) {
  auto kind = federated::ParseAttack(j.attack());
  if (!kind.ok()) return kind.status().WithContext("job field 'attack'");
  if (!(j.attack_fraction() >= 0 && j.attack_fraction() < 1))
    return Bad("attack_fraction", "must be in [0, 1)");
  if (!(j.attack_scale() > 0) || !std::isfinite(j.attack_scale()))
    return Bad("attack_scale", "must be a positive number");
  const std::uint32_t clients = j.nodes() - 1;
  if (j.attackers_size() > 0) {
    if (j.attack_fraction() > 0)
      return Bad("attackers", "and attack_fraction both choose the attackers: set one of them");
    if (j.attackers_size() >= static_cast<int>(clients))
      return Bad("attackers", "names " + std::to_string(j.attackers_size()) + " of the " +
                                  std::to_string(clients) + " clients: at least one must be honest");
    std::set<std::uint32_t> seen;
    for (std::uint32_t id : j.attackers()) {
      if (id >= j.nodes())
        return Bad("attackers",
                   "node " + std::to_string(id) + " is not below job.nodes " + std::to_string(j.nodes()));
      if (id == j.aggregator())
        return Bad("attackers", "node " + std::to_string(id) + " is the aggregator, not a client");
      if (!seen.insert(id).second) return Bad("attackers", "names node " + std::to_string(id) + " twice");
    }
  }
  if (kind.value() == federated::AttackKind::kNone) return Status::Ok();
  if (j.secure_aggregation()) return Bad("secure_aggregation", "needs attack = none");
  if (federated::PoisonsUpdates(kind.value())) {
    if (j.algorithm() == "fedbuff")
      return Bad("attack", "'" + j.attack() + "' runs in synchronous rounds, not fedbuff (label-flip does)");
    if (j.dp_clip() > 0)
      return Bad("attack", "'" + j.attack() + "' does not combine with DP-FedAvg on daemons");
    if (j.upload_compression() != "none")
      return Bad("attack", "'" + j.attack() + "' needs upload_compression = none on daemons");
  }
  return Status::Ok();
}

std::vector<bool> AttackersOf(const proto::JobConfig& j) {
  const auto kind = federated::ParseAttack(j.attack());
  if (!kind.ok() || kind.value() == federated::AttackKind::kNone) return {};
  const NodeId n = j.nodes() - 1;
  std::vector<bool> attacker(n, false);
  if (j.attackers_size() > 0) {
    const IdMap map{j.aggregator(), n};
    for (std::uint32_t id : j.attackers()) attacker[map.ToIndex(id)] = true;
    return attacker;
  }
  // As sim/federated_run.cc: the first llround(fraction n) of the clients shuffled by (seed, n, kAttack).
  const auto count = static_cast<std::size_t>(std::llround(j.attack_fraction() * n));
  if (count == 0) return {};
  std::vector<NodeId> ids(n);
  for (NodeId i = 0; i < n; ++i) ids[i] = i;
  Rng rng(j.seed(), n, RngPurpose::kAttack);
  rng.Shuffle(std::span<NodeId>(ids));
  for (std::size_t i = 0; i < count; ++i) attacker[ids[i]] = true;
  return attacker;
}

Status FillServerAttack(const proto::JobConfig& j, federated::ServerOptions* o) {
  MURMUR_ASSIGN_OR_RETURN(federated::AttackKind kind, federated::ParseAttack(j.attack()));
  if (j.krum_f() == 0) {
    const double expected_bad = AttackFraction(j) * static_cast<double>(o->clients_per_round);
    o->robust.krum_f = std::max<std::size_t>(1, std::llround(expected_bad));
  }
  if (!federated::PoisonsUpdates(kind)) return Status::Ok();
  // The server holds the round's updates whenever an attack poisons them, as in the
  // simulator (so that honest updates are aggregated the same way); it rewrites
  // only those of ALIE and IPM attackers. Sign-flip and gaussian attackers have
  // rewritten theirs already: for the server they are no one's.
  o->attack = kind;
  o->attack_scale = j.attack_scale();
  if (kind == federated::AttackKind::kAlie || kind == federated::AttackKind::kIpm)
    o->attacker = AttackersOf(j);
  return Status::Ok();
}

bool FillClientAttack(const proto::JobConfig& j, NodeId index, federated::ClientOptions* co) {
  const std::vector<bool> attacker = AttackersOf(j);
  if (attacker.empty() || !attacker[index]) return false;
  const federated::AttackKind kind = federated::ParseAttack(j.attack()).value();
  if (kind == federated::AttackKind::kSignFlip || kind == federated::AttackKind::kGaussian) {
    co->attack = kind;
    co->attack_scale = j.attack_scale();
  }
  return true;
}

}  // namespace murmur::node
