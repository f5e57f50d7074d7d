// RunFederatedScenario: one `murmur sim` run of a federated algorithm.
//
// The world (data, partition, model, device profiles, churn) is built as for
// gossip (sim/run/world.h); the scenario's `nodes` are the clients 0 .. n-1, each
// with its data partition, and one more simulated node, id n, is the server
// (an "edge-server" device profile). The server and the clients are
// federated::FedServer and federated::FedClient running unchanged on their
// SimEnvs; churn tells the server who is online. With edge_aggregators E > 0
// the E edge aggregators (federated::EdgeAggregator) sit between the clients
// and the server, which is then the top of the hierarchy (node ids and the
// assignment of clients to edges: sim/run/federated_edges.h). Label-flip
// attackers train on a flipped copy of their samples (sim/adversary/label_flip.h).
//
// Secure aggregation (secure_aggregation: true): the server and clients run
// SecAgg+ (federated/secagg_*.h) each round; every client has an Ed25519
// identity derived from (seed, id) and the directory of all of them; the
// weight is n_i / max_j n_j; secrets are drawn from the simulation's
// streams so that runs repeat (they are not secret in a simulation).
//
// Algorithms: fedavg, fedprox (mu = prox_mu), scaffold, fedavgm, fedadam,
// fedyogi, fedadagrad (server optimizers of Reddi et al. 2021), fedbuff
// (asynchronous buffered aggregation). A "round" is one server update.
//
// Metrics: the evaluated model is the server's global model. avg_acc and
// avg_loss are its accuracy and loss on the whole test set; acc_mean, acc_min
// and acc_max are the same global model on the eval_samples subset (there is
// one model, so they coincide); consensus is 0; train_loss is the mean
// training loss the round's clients reported.
//
// Thread-safety: one run per call, like RunScenario.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "proto/scenario.pb.h"
#include "sim/run/run_summary.h"
#include "sim/run/scenario.h"

namespace murmur::sim {

// Runs a federated scenario. REQUIRES: engine::IsFederatedAlgorithm(s.spec().algorithm());
// returns ValidateScenario's Status otherwise.
Result<RunSummary> RunFederatedScenario(const proto::Scenario& s, const ProgressFn& progress = {});

// What a federated run reports beyond RunSummary (for tests and docs).
struct FederatedStats {
  double epsilon = 0;       // (epsilon, dp_delta) spent; 0 without DP
  std::string stop_reason;  // why the server stopped
  std::uint64_t results_accepted = 0;
  std::uint64_t results_dropped = 0;         // stragglers and late results
  std::vector<float> final_model;            // the server's global model at the end
  std::uint64_t secagg_rounds_aborted = 0;   // SecAgg+ rounds that could not be unmasked
  std::uint64_t secagg_clients_dropped = 0;  // clients that shared keys but sent no masked input
  std::size_t contributors = 0;              // clients (flat) or edges with at least one accepted result
  std::uint64_t top_bytes_sent = 0;          // encoded bytes the (top) server sent and received
  std::uint64_t top_bytes_received = 0;
};
// As RunFederatedScenario, also filling `stats` (may be null), with the
// caller's interrupt flag and learners (RunOptions; keep_final_models is
// read from `stats`).
Result<RunSummary> RunFederatedScenario(const proto::Scenario& s, const ProgressFn& progress,
                                        FederatedStats* stats, const RunOptions& options = {});
// The same for a planned scenario (sim/run/scenario.h).
Result<RunSummary> RunFederatedScenario(const ScenarioPlan& plan, const ProgressFn& progress,
                                        FederatedStats* stats, const RunOptions& options = {});

}  // namespace murmur::sim
