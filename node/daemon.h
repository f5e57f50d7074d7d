// Daemon: what murmurd runs. It loads the node's identity and certificate,
// opens the secure Transport, the Prometheus endpoint and the operator's
// control port, and runs gossip and federated jobs (node/job/factory.h) on an AsioEnv.
//
// Jobs: a job comes from the config's `job` block (the daemon runs it and
// exits when it ends) or from an operator's `murmur job submit` (the daemon
// keeps serving: status, peers, metrics, stop, the next job; `murmur job
// submit` prepares it on every daemon and commits it when all took it). The current job
// and its state (running, stopped, done) are kept in the data directory, so a
// daemon restarted mid-job (kill -9 included) resumes it from its checkpoint
// and catches up with the peers that went on (docs/daemon.md).
//
// Stop: RequestStop() (SIGTERM in murmurd) lets the current round finish, or
// abandons it after drain_timeout, writes a checkpoint of the last completed
// round, and returns from Run() with OK; the job stays "running" on disk and
// resumes at the next start. `murmur job stop` does the same to the job only
// and marks it stopped.
//
// Certificate renewal: SIGHUP (with `handle_signals`), ReloadCertificate()
// or `murmur cert reload` read the certificate file again; a renewal that
// passes node/certificate_reload.h's checks is presented on new handshakes
// and sent on open sessions (node/transport/transport.h), so that they outlive the old
// certificate; docs/daemon.md "Certificate renewal".
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

// How long a job prepared by an all-or-nothing submission (JobPrepare,
// proto/control.proto) holds a daemon without its commit.
inline constexpr int kPrepareHoldSeconds = 30;

class DaemonImpl;

class Daemon {
 public:
  // Validates the config, loads keys and data, binds the sockets.
  static Result<std::unique_ptr<Daemon>> Create(const proto::NodeConfig& config);
  ~Daemon();

  // Serves until a stop request, or until the config's job ends. Also stops
  // on SIGTERM and SIGINT when `handle_signals`.
  Status Run(bool handle_signals = false);
  void RequestStop();
  // Reloads the certificate file (as SIGHUP and `murmur cert reload` do):
  // OK when the renewal was taken, else the reason it was refused (the old
  // certificate stays in use). Waits for the io thread: REQUIRES Run() is
  // running on another thread.
  Status ReloadCertificate();

  std::uint16_t port() const;
  std::uint16_t metrics_port() const;
  std::uint16_t control_port() const;
  std::uint64_t rounds_done() const;  // of the current or last job, including rounds before a resume
  // The model after the last completed round (valid once Run returned).
  std::vector<float> params() const;
  double last_accuracy() const;  // test accuracy of the last evaluation (-1: none yet)
  // gossip-learning: how often the job drew each node id as a peer (empty: another job or none).
  std::vector<std::uint64_t> peer_draws() const;

 private:
  explicit Daemon(std::unique_ptr<DaemonImpl> impl);
  std::unique_ptr<DaemonImpl> impl_;
};

}  // namespace murmur::node
