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

#include "core/env.h"
#include "engine/plan.h"
#include "federated/client.h"
#include "federated/server.h"

namespace murmur::engine {

struct FederatedHost {
  bool real_secrets = false;
  bool clients_attack = false;
};

// Whether client `index` trains on flipped labels y -> C - 1 - y (label-flip).
bool FlipsLabels(const JobPlan& plan, NodeId index);

// The server's options. The host adds `available` and secagg.directory.
// REQUIRES: a federated plan.
federated::ServerOptions MakeServerOptions(const JobPlan& plan, const FederatedHost& host);

// Client `index`'s options, `num_samples` its training samples and
// `max_samples` a public bound on every client's (SecAgg+'s weight scale).
// The host adds secagg.identity and secagg.directory.
// REQUIRES: a federated plan.
federated::ClientOptions MakeClientOptions(const JobPlan& plan, NodeId index, double num_samples,
                                           double max_samples, const FederatedHost& host);

}  // namespace murmur::engine
