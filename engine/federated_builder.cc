#include "engine/federated_builder.h"

#include <algorithm>
#include <cmath>

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
double AttackFraction(const JobPlan& plan) {
  const proto::JobSpec& s = plan.spec();
  if (s.attackers_size() > 0) return static_cast<double>(s.attackers_size()) / plan.fed().clients;
  return s.attack_fraction();
}

}  // namespace

bool FlipsLabels(const JobPlan& plan, NodeId index) {
  const FederatedPlan& f = plan.fed();
  return f.attack == federated::AttackKind::kLabelFlip && index < f.attackers.size() && f.attackers[index];
}

federated::ServerOptions MakeServerOptions(const JobPlan& plan, const FederatedHost& host) {
  const proto::JobSpec& s = plan.spec();
  const FederatedPlan& f = plan.fed();
  federated::ServerOptions o;
  o.num_clients = f.clients;
  o.rounds = s.rounds();
  o.clients_per_round = f.clients_per_round;
  o.over_commit = s.over_commit();
  o.deadline = FromSeconds(s.deadline());
  o.min_results = s.min_clients();
  o.partial_work = s.partial_work();
  o.fednova = s.fednova();
  o.scaffold = plan.algorithm() == Algorithm::kScaffold;
  o.async = plan.algorithm() == Algorithm::kFedBuff;
  o.concurrency = s.fedbuff_concurrency();
  o.buffer = s.fedbuff_buffer();
  o.selection.kind = f.selection;
  o.optimizer.kind = f.optimizer;
  o.optimizer.lr = s.server_lr() > 0 ? s.server_lr() : federated::DefaultServerLr(o.optimizer.kind);
  o.optimizer.momentum = s.server_momentum();
  o.optimizer.nesterov = s.server_nesterov();
  o.optimizer.beta1 = s.server_beta1();
  o.optimizer.beta2 = s.server_beta2();
  o.optimizer.tau = s.server_tau();
  o.robust = f.robust;
  o.plausibility = s.plausibility();
  // Attacks: the server holds the round's updates whenever an attack poisons
  // them (so that honest updates are aggregated the same way in both hosts).
  const federated::AttackKind attack = f.attack;
  const std::vector<bool>& attackers = f.attackers;
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
  const double expected_bad = AttackFraction(plan) * static_cast<double>(o.clients_per_round);
  o.robust.krum_f = s.krum_f() > 0 ? s.krum_f() : std::max<std::size_t>(1, std::llround(expected_bad));
  o.dp_clip = s.dp_clip();
  o.dp_noise = s.dp_noise();
  o.dp_client_side = f.dp_client_side;
  o.dp_adaptive = s.dp_adaptive();
  o.adaptive.count_stddev = static_cast<double>(o.clients_per_round) / 20;  // Andrew et al.'s sigma_b
  o.epsilon_budget = s.epsilon_budget();
  o.dp_delta = s.dp_delta();
  o.broadcast = f.broadcast;
  o.leave_out_silent = host.membership;
  // Lossless both ways and no DP: clients return models, and FedAvg is exact.
  o.request_model = !f.upload && !o.broadcast && o.dp_clip == 0;
  if (s.secure_aggregation()) {
    o.secure_aggregation = true;
    o.secagg.params = SecAggParamsOf(s);
    o.secagg.deterministic_seed = !host.real_secrets;
    o.secagg.key_timeout = FromSeconds(s.secagg_timeout());
    o.secagg.input_timeout = FromSeconds(s.deadline() > 0 ? s.deadline() : 600);
  }
  return o;
}

federated::ClientOptions MakeClientOptions(const JobPlan& plan, NodeId index, double num_samples,
                                           double max_samples, const FederatedHost& host) {
  const proto::JobSpec& s = plan.spec();
  const FederatedPlan& f = plan.fed();
  federated::ClientOptions co;
  co.local_steps = s.local_epochs() > 0 ? 0 : static_cast<int>(s.local_steps());
  co.local_epochs = s.local_epochs();
  co.batch = static_cast<int>(s.batch());
  co.num_samples = num_samples;
  co.prox_mu = plan.algorithm() == Algorithm::kFedProx ? s.prox_mu() : 0.0;
  co.scaffold = plan.algorithm() == Algorithm::kScaffold;
  co.local_buffers = plan.local_buffers();
  co.upload = f.upload;
  if (f.dp_client_side && s.dp_clip() > 0) {
    co.dp_clip = s.dp_clip();
    co.dp_noise_stddev = s.dp_noise() * s.dp_clip() / std::sqrt(static_cast<double>(f.clients_per_round));
  }
  if (s.secure_aggregation()) {
    co.secagg.params = SecAggParamsOf(s);
    co.secagg.deterministic_secrets = !host.real_secrets;
    co.secagg_weight_scale = max_samples;
    co.secagg_dropout = s.secagg_dropout();
  }
  if (host.clients_attack) {
    if (index < f.attackers.size() && f.attackers[index] &&
        (f.attack == federated::AttackKind::kSignFlip || f.attack == federated::AttackKind::kGaussian)) {
      co.attack = f.attack;
      co.attack_scale = s.attack_scale();
    }
  }
  return co;
}

std::unique_ptr<federated::FedServer> MakeFedServer(Env& env, ParamVector x0,
                                                    federated::ServerOptions options,
                                                    RoundObserver* observer) {
  return std::make_unique<federated::FedServer>(env, std::move(x0), std::move(options), observer);
}

std::unique_ptr<federated::FedClient> MakeFedClient(Env& env, NodeId server, LocalLearner& learner,
                                                    const Layout& layout, federated::ClientOptions options) {
  return std::make_unique<federated::FedClient>(env, server, learner, layout, std::move(options));
}

namespace {

federated::ServerOptions TopServerOptions(federated::ServerOptions flat, NodeId edges) {
  federated::ServerOptions o = std::move(flat);
  o.num_clients = edges;
  o.clients_per_round = edges;
  o.over_commit = 1;
  o.deadline = 2 * o.deadline;  // a backstop for lost messages: the edges close at the deadline
  o.partial_work = false;
  o.selection = {};
  o.robust = {};
  o.attack = federated::AttackKind::kNone;
  o.attacker.clear();
  return o;
}

}  // namespace

std::unique_ptr<federated::FedServer> MakeTopServer(Env& env, ParamVector x0,
                                                    const federated::ServerOptions& flat, NodeId edges,
                                                    RoundObserver* observer) {
  return MakeFedServer(env, std::move(x0), TopServerOptions(flat, edges), observer);
}

std::size_t EdgeClientsPerRound(std::size_t k, std::size_t size, NodeId clients) {
  if (size == 0) return 0;
  const double share = static_cast<double>(k) * static_cast<double>(size) / static_cast<double>(clients);
  return std::max<std::size_t>(1, static_cast<std::size_t>(std::llround(share)));
}

std::unique_ptr<federated::EdgeAggregator> MakeEdgeAggregator(Env& env, const Layout& layout,
                                                              const federated::ServerOptions& flat,
                                                              NodeId parent, std::vector<NodeId> members,
                                                              NodeId clients) {
  federated::EdgeOptions e;
  e.parent = parent;
  e.clients_per_round = EdgeClientsPerRound(flat.clients_per_round, members.size(), clients);
  e.over_commit = flat.over_commit;
  e.deadline = flat.deadline;
  e.partial_work = flat.partial_work;
  e.work_fraction = flat.work_fraction;
  e.fednova = flat.fednova;
  e.selection = flat.selection;
  e.robust = flat.robust;
  // Krum's f scales with the edge's share of the round.
  const double f = static_cast<double>(flat.robust.krum_f) * static_cast<double>(e.clients_per_round) /
                   static_cast<double>(flat.clients_per_round);
  e.robust.krum_f = std::max<std::size_t>(1, static_cast<std::size_t>(std::llround(f)));
  e.attack = flat.attack;
  e.attack_scale = flat.attack_scale;
  e.max_weight = flat.max_weight;  // with edges: the whole partition
  e.plausibility = flat.plausibility;
  if (flat.dp_client_side)
    e.length_floor = federated::ClientNoiseLength(flat.dp_clip, flat.dp_noise, flat.clients_per_round,
                                                  layout.total_size());
  if (!flat.attacker.empty()) {
    for (NodeId m : members) e.attacker.push_back(flat.attacker[m]);
  }
  e.members = std::move(members);
  return std::make_unique<federated::EdgeAggregator>(env, layout, std::move(e));
}

}  // namespace murmur::engine
