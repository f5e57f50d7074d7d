// The federated server's and clients' options from a JobSpec, built once for
// both hosts (the simulator's federated run and a daemon's federated job):
// FedAvg and its server optimizers (Reddi et al. 2021), FedProx, SCAFFOLD,
// FedBuff, deadlines and over-commitment, robust rules, DP-FedAvg, SecAgg+
// and the simulated attackers.
//
// The engine numbers clients 0 .. n-1 (n = spec.nodes) and the server n in
// both hosts; a daemon maps those indices to its node ids (node/job/index_env.h).
// What the hosts add is theirs: the SecAgg+ identities and key directory, the
// membership view (ServerOptions::available), each client's sample count and
// data. FederatedHost says what differs:
//
//   real_secrets     a daemon draws SecAgg+ secrets and the graph seed from
//                    the system's randomness; the simulator from its streams,
//                    so that runs repeat
//   clients_attack   a daemon's sign-flip and gaussian attackers are the
//                    client daemons themselves, which send their poisoned
//                    update (the aggregator still plays the omniscient ALIE
//                    and IPM, which need the round's honest updates); the
//                    simulator's server rewrites every attacker's update in
//                    one place. Both give the same model for sign-flip.
//
// Thread-safety: pure functions.
#pragma once

#include <memory>
#include <vector>

#include "compression/compressor.h"
#include "core/env.h"
#include "core/status.h"
#include "federated/client.h"
#include "federated/server.h"
#include "proto/job_spec.pb.h"

namespace murmur::engine {

struct FederatedHost {
  bool real_secrets = false;
  bool clients_attack = false;
};

// The clients: spec.nodes, but for edge_assignment nearest-rsu, whose last
// edge_aggregators nodes are the roadside units that aggregate (simulator).
NodeId FederatedClients(const proto::JobSpec& spec);

// Clients a round keeps: clients_per_round, or every client for 0.
std::size_t ClientsPerRound(const proto::JobSpec& spec);

// Which clients attack (by index): those `attackers` names, or the first
// llround(attack_fraction n) of the clients shuffled by Rng(seed, n, kAttack);
// empty when none attack.
std::vector<bool> AttackersOf(const proto::JobSpec& spec);

// Whether client `index` trains on flipped labels y -> C - 1 - y (label-flip).
bool FlipsLabels(const proto::JobSpec& spec, NodeId index);

// The upload compressor (null for none). InvalidArgument names the field.
Result<std::shared_ptr<const compression::Compressor>> UploadCompressor(const proto::JobSpec& spec);

// The server's options. The host adds `available` and secagg.directory.
// REQUIRES: ValidateJobSpec(spec, host).ok(), a federated algorithm.
Result<federated::ServerOptions> MakeServerOptions(const proto::JobSpec& spec, const FederatedHost& host);

// Client `index`'s options, `num_samples` its training samples and
// `max_samples` a public bound on every client's (SecAgg+'s weight scale).
// The host adds secagg.identity and secagg.directory.
Result<federated::ClientOptions> MakeClientOptions(const proto::JobSpec& spec, NodeId index,
                                                   double num_samples, double max_samples,
                                                   const FederatedHost& host);

}  // namespace murmur::engine
