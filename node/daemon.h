// Daemon: what murmurd runs. It loads the node's identity and certificate,
// builds the job (model, the node's IID shard of the dataset, the topology
// from topology::MakeSchedule, the codec), and runs
// gossip::DecentralizedSgdNode on an AsioEnv over the secure Transport, with
// Prometheus metrics on loopback and checkpoints in the data directory.
//
// Resume: a checkpoint (node/checkpoint.h) written after round r holds the
// model; a restarted daemon starts from it and runs the remaining rounds. The
// gossip node numbers its rounds from 0 again, so the daemons of a job must
// resume together (the job restarts as a whole) — see docs/daemon.md.
//
// Stop: RequestStop() (SIGTERM in murmurd) lets the current round finish, or
// abandons it after drain_timeout, writes a checkpoint of the last completed
// round, and returns from Run() with OK.
//
// Thread-safety: Run() on one thread (it runs the io_context); RequestStop()
// and the accessors from any thread.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/status.h"
#include "proto/node.pb.h"

namespace murmur::node {

class DaemonImpl;

class Daemon {
 public:
  // Validates the config, loads keys and data, binds the sockets.
  static Result<std::unique_ptr<Daemon>> Create(const proto::NodeConfig& config);
  ~Daemon();

  // Runs the job to its end (or a stop request). Also stops on SIGTERM and
  // SIGINT when `handle_signals`.
  Status Run(bool handle_signals = false);
  void RequestStop();

  std::uint16_t port() const;
  std::uint16_t metrics_port() const;
  std::uint64_t rounds_done() const;  // including rounds before a resume
  // The model after the last completed round (valid once Run returned).
  std::vector<float> params() const;
  double last_accuracy() const;  // test accuracy of the last evaluation (-1: none yet)

 private:
  explicit Daemon(std::unique_ptr<DaemonImpl> impl);
  std::unique_ptr<DaemonImpl> impl_;
};

}  // namespace murmur::node
