// FederatedJob: one federated job inside a daemon (algorithms fedavg,
// fedprox, scaffold, fedavgm, fedadam, fedyogi, fedadagrad, fedbuff). The
// daemon named by `aggregator` runs federated::FedServer; every other daemon
// of the job runs federated::FedClient; both unchanged, on a JobEnv over the
// daemon's AsioEnv.
//
// Ids: the engine numbers clients 0 .. n-1 and the server n (n = spec.nodes),
// as `murmur sim` does; the job's daemons are ids 0 .. n, client index c is
// node id c below the aggregator and c + 1 above it. The server's and clients'
// options come from the engine (engine/federated_builder.h), and everything
// is derived from the spec's seed exactly as the simulator derives it for the
// same spec (initial model, each client's partition, batch and compression
// streams, the server's selection stream), so a job and `murmur sim` of the
// same spec train the same model (docs/daemon.md, "Federated jobs").
//
// Start: each client sends a "join" (node/job/federated_control.h) every second
// while the job runs; the aggregator starts its first round when every client
// has joined, or after join_timeout seconds with those that have (the others
// are offline to the server until they join). At the end the aggregator
// sends "done" to every client, and the clients end too.
//
// Liveness: the aggregator never selects a client the daemon's membership
// declares dead or left (`peer_alive`, ServerOptions::available), and gives
// up a task it holds when it is declared dead, so a round does not wait for
// the deadline (PeersChanged).
//
// Checkpoints: every checkpoint_every rounds the aggregator writes the global
// model and its server's whole state between rounds (federated/server.h,
// "Resuming": round count, optimizer moments, SCAFFOLD's c, the privacy
// accountant, the adaptive clip norm, selection's stream and per-client
// state) as "server/..." entries; after a restart it imports them, so that
// with its clients running on it makes the updates of a job never stopped,
// and a DP job goes on with the privacy already spent. A checkpoint without
// that state (an older murmurd) is refused. The secret DP noise stream's
// position is not written. Clients are stateless: a restarted client joins
// again, with its batch stream from the start and its SCAFFOLD control
// variate from zero.
//
// Status: on the aggregator, rounds_done() is the server updates made,
// accuracy() the global model's test accuracy (every eval_every rounds) and
// epsilon() the privacy spent (DP); on a client, rounds_done() is the round
// of the last task received, accuracy() the test accuracy of the global
// model in that task (-1 before the first) and loss() the mean training loss
// of its local steps on the last task; after "done", the job's rounds.
//
// Secure aggregation (SecAgg+), DP-FedAvg and the robust rules run as in
// `murmur sim` (docs/daemon.md, "Privacy and robustness"), with two
// differences that make them real: every SecAgg+ secret and graph seed, and
// the DP noise, come from the system's randomness instead of the job seed;
// and each client signs its SecAgg+ keys with its daemon's identity key, which
// the aggregator and the other clients check against the key of the
// certificate that daemon presented on its session (a SecAgg+ client joins
// once it has a session with every daemon of the job, or after join_timeout).
// An aborted SecAgg+ round leaves the model as it is, counts as a round and
// is reported by warning(); a server that stops early (privacy budget) ends
// the job, also with a warning.
//
// Simulated attacks (fields attack, attack_fraction, attack_scale, attackers)
// run as in `murmur sim`, the same clients attacking: a sign-flip or gaussian
// attacker daemon sends its poisoned update itself, a label-flip attacker
// trains on flipped labels, and the aggregator plays the omniscient ALIE and
// IPM attackers (engine/federated_builder.h; docs/daemon.md "Simulated attacks").
//
// Thread-safety: everything on the daemon's io thread, except the atomics and
// params(), which may be read from any thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/env.h"
#include "core/status.h"
#include "node/job/job.h"
#include "node/job/job_data.h"
#include "proto/node.pb.h"

namespace murmur::node {

class FederatedJobImpl;

class FederatedJob final : public Job {
 public:
  // `peer_alive` and `local`: see MakeJob (node/job/job.h).
  static Result<std::unique_ptr<Job>> Create(const PlannedJob& job, Env& env, std::string checkpoint_path,
                                             OnEnd on_end, std::function<bool(NodeId)> peer_alive = {},
                                             const LocalData& local = {}, JobKeys keys = {});
  ~FederatedJob() override;

  MessageSink* sink() override;
  std::vector<NodeId> neighbours() const override;
  void Start() override;
  void PeersChanged() override;
  void Drain() override;
  void Abandon() override;

  const proto::JobConfig& config() const override;
  bool ended() const override;
  std::uint64_t rounds_done() const override;
  double accuracy() const override;
  double loss() const override;
  std::uint64_t checkpoints() const override;
  double epsilon() const override;
  std::vector<float> params() const override;
  std::string warning() const override;
  std::vector<NodeId> waiting_for() const override;
  std::string role() const override;

 private:
  explicit FederatedJob(std::unique_ptr<FederatedJobImpl> impl);
  std::unique_ptr<FederatedJobImpl> impl_;
};

}  // namespace murmur::node
