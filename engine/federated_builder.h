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
#include "core/learner.h"
#include "core/param_vector.h"
#include "core/round_observer.h"
#include "engine/plan.h"
#include "federated/client.h"
#include "federated/edge.h"
#include "federated/server.h"

namespace murmur::engine {

struct FederatedHost {
  bool real_secrets = false;
  bool clients_attack = false;
  // A membership view tells who is alive: a client alive but silent for its
  // tasks is left out (ServerOptions::leave_out_silent).
  bool membership = false;
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

// The federated nodes, built here for both hosts from the options above (with
// what the host added to them); a host constructs none itself. Each is bound
// to `env` (the host's; it outlives the node), `observer` may be null.
std::unique_ptr<federated::FedServer> MakeFedServer(Env& env, ParamVector x0,
                                                    federated::ServerOptions options,
                                                    RoundObserver* observer);
std::unique_ptr<federated::FedClient> MakeFedClient(Env& env, NodeId server, LocalLearner& learner,
                                                    const Layout& layout, federated::ClientOptions options);

// Hierarchical aggregation (spec edge_aggregators E > 0; the simulator):
// clients 0 .. C-1, edges C .. C+E-1, the top server C+E. Every edge keeps
// k_e = round(K |cluster_e| / C) results per round (at least 1 for a
// non-empty cluster), so that the edges together keep about K;
// over-commitment, the deadline, partial work, FedNova, the robust rule (Krum's
// f scaled to the edge's share) and the attacks apply at the edges. The top
// server waits for every edge (an edge with nothing answers empty) or, with a
// deadline D, at most 2 D; it applies the spec's server optimizer to the
// sample-weighted mean of the edges' updates. `flat` is what
// MakeServerOptions gives (the options a server of every client would have).

// k_e = round(K size / clients), at least 1 when size > 0.
std::size_t EdgeClientsPerRound(std::size_t k, std::size_t size, NodeId clients);

// The top server of `edges` edge aggregators.
std::unique_ptr<federated::FedServer> MakeTopServer(Env& env, ParamVector x0,
                                                    const federated::ServerOptions& flat, NodeId edges,
                                                    RoundObserver* observer);

// The edge serving `members` (client node ids) of `clients`; `parent` is the top's node id.
std::unique_ptr<federated::EdgeAggregator> MakeEdgeAggregator(Env& env, const Layout& layout,
                                                              const federated::ServerOptions& flat,
                                                              NodeId parent, std::vector<NodeId> members,
                                                              NodeId clients);

}  // namespace murmur::engine
