// FedFleet: in-process daemons on loopback for the federated job tests
// (tests/node/federated_job_test.cc, federated_privacy_test.cc): each with its
// own data directory, identity and certificate from one test coordinator,
// every other daemon in its `peers`; an operator calls them over the control
// port. BlobsJob gives a small federated job and ScenarioOf the `murmur sim`
// scenario of its spec.
#pragma once

#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <functional>
#include <thread>

#include "crypto/certificate.h"
#include "node/control/client.h"
#include "node/daemon.h"
#include "node/job/federated_control.h"
#include "node/job/job.h"
#include "node/job/job_message.h"
#include "proto/scenario.pb.h"
#include "tests/node/loopback.h"

namespace murmur::node::testing {

namespace fs = std::filesystem;

// `nodes` idle daemons (no job in their configs) and an operator.
struct FedFleet {
  NodeId nodes;
  fs::path root;
  crypto::Identity coordinator = Seeded(60);
  std::vector<std::unique_ptr<Daemon>> daemons;
  std::vector<std::thread> threads;

  // `tweak` changes daemon i's config last (e.g. enables fault injection).
  explicit FedFleet(NodeId n = 4, const std::function<void(NodeId, proto::NodeConfig&)>& tweak = {})
      : nodes(n) {
    root = fs::temp_directory_path() / std::string("murmur_fedjob_").append(std::to_string(::getpid()));
    fs::remove_all(root);
    fs::create_directories(root);
    REQUIRE(coordinator.Save(root.string(), true).ok());
    // Ports are probed free before the daemons take them (FreeLoopbackPorts).
    constexpr int kAttempts = 5;
    for (int attempt = 0; attempt < kAttempts; ++attempt) {
      std::vector<std::uint16_t> ports = FreeLoopbackPorts(nodes);
      for (NodeId i = 0; i < nodes; ++i) {
        const fs::path dir = root / std::string("n").append(std::to_string(i));
        fs::create_directories(dir);
        auto creds =
            Creds(coordinator, static_cast<std::uint8_t>(i + 1), "fleet", 3600, crypto::kRoleNode, i);
        REQUIRE(creds.identity.Save(dir.string(), true).ok());
        REQUIRE(crypto::SaveCertificateFile((dir / "node.cert").string(), creds.certificate).ok());
        proto::NodeConfig c;
        c.set_node_id(i);
        c.set_listen("127.0.0.1:" + std::to_string(ports[i]));
        c.set_data_dir(dir.string());
        c.set_coordinator_key((root / "identity.pub").string());
        c.set_network_id("fleet");
        c.set_log_level("error");
        c.set_drain_timeout(2);
        // Every daemon sends from 127.0.0.1: the per-address message budget is n daemons' worth.
        c.set_message_rate_per_address(1000.0 * nodes);
        c.set_message_burst_per_address(2000.0 * nodes);
        for (NodeId j = 0; j < nodes; ++j) {
          if (j == i) continue;
          auto* p = c.add_peers();
          p->set_id(j);
          p->set_address("127.0.0.1:" + std::to_string(ports[j]));
        }
        if (tweak) tweak(i, c);
        auto d = Daemon::Create(c);
        // A probed port another process took in between: probe afresh and start over.
        if (!d.ok() && attempt + 1 < kAttempts && d.status().message().find("in use") != std::string::npos) {
          daemons.clear();
          break;
        }
        REQUIRE_MESSAGE(d.ok(), d.status().ToString());
        daemons.push_back(std::move(d).value());
      }
      if (daemons.size() == nodes) break;
    }
    for (auto& d : daemons) threads.emplace_back([&d] { CHECK(d->Run().ok()); });
  }
  ~FedFleet() {
    Stop();
    daemons.clear();
    fs::remove_all(root);
  }
  void Stop() {
    for (auto& d : daemons) d->RequestStop();
    for (auto& t : threads)
      if (t.joinable()) t.join();
    threads.clear();
  }

  std::string Control(NodeId i) const { return "127.0.0.1:" + std::to_string(daemons[i]->control_port()); }
  // A control request from an operator certificate with `roles`.
  Result<proto::ControlResponse> Call(NodeId i, const proto::ControlRequest& r,
                                      std::uint8_t roles = crypto::kRoleOperator) const {
    auto op = Creds(coordinator, 77, "fleet", 3600, roles);
    return CallDaemon(Control(i), op, Policy(coordinator), r, std::chrono::seconds(10));
  }
  proto::ControlResponse Response(NodeId i) const {
    proto::ControlRequest r;
    r.mutable_status();
    auto s = Call(i, r);
    REQUIRE_MESSAGE(s.ok(), s.status().ToString());
    return *s;
  }
  proto::JobStatus Status(NodeId i) const { return Response(i).job(); }
  // Submits in id order, so the aggregator gets the job before some of its clients and after
  // others: the join messages make the order irrelevant.
  void SubmitAll(const proto::JobConfig& job) {
    proto::ControlRequest r;
    *r.mutable_submit()->mutable_job() = job;
    for (NodeId i = 0; i < nodes; ++i) {
      auto s = Call(i, r);
      REQUIRE_MESSAGE(s.ok(), s.status().ToString());
      REQUIRE_MESSAGE(s->ok(), s->error());
    }
  }
  // Polls every 100 ms (each poll is a handshake per daemon).
  bool Poll(const std::function<bool()>& cond, std::chrono::seconds limit = std::chrono::seconds(60)) {
    const auto end = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < end) {
      if (cond()) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return cond();
  }
  bool WaitState(const std::string& state, std::chrono::seconds limit = std::chrono::seconds(60)) {
    return Poll(
        [&] {
          for (NodeId i = 0; i < nodes; ++i)
            if (Status(i).state() != state) return false;
          return true;
        },
        limit);
  }
  bool WaitDone(std::chrono::seconds limit) { return WaitState("done", limit); }
};

// A federated job for `daemons` daemons: the aggregator and daemons - 1
// clients, every client in every round, a 60 s deadline.
inline proto::JobConfig BlobsJob(const std::string& id, const std::string& algorithm, NodeId aggregator,
                                 NodeId daemons = 4) {
  proto::JobConfig job;
  job.set_job_id(id);
  job.mutable_spec()->set_algorithm(algorithm);
  job.mutable_spec()->set_dataset("synthetic:blobs");
  job.mutable_spec()->set_model("softmax");
  job.mutable_spec()->set_nodes(daemons - 1);
  job.mutable_spec()->set_clients_per_round(0);
  job.mutable_spec()->set_deadline(60);
  job.mutable_spec()->set_secagg_timeout(30);
  job.set_aggregator(aggregator);
  job.mutable_spec()->set_rounds(8);
  job.mutable_spec()->set_lr(0.05);
  job.mutable_spec()->set_local_epochs(0);
  job.mutable_spec()->set_local_steps(20);
  job.mutable_spec()->set_eval_every(4);
  job.set_checkpoint_every(4);
  job.mutable_spec()->set_seed(7);
  return job;
}

// The `murmur sim` run of the same job: its spec, as it is.
inline proto::Scenario ScenarioOf(const proto::JobConfig& job) {
  proto::Scenario s;
  *s.mutable_spec() = job.spec();
  s.set_threads(1);
  return s;
}

// A job field and a change that spoils it: ValidateJobConfig must refuse the
// spoilt job with InvalidArgument naming the field.
struct Refusal {
  const char* field;
  std::function<void(proto::JobConfig&)> spoil;
};

inline void CheckRefusals(const proto::JobConfig& ok, std::initializer_list<Refusal> cases) {
  for (const Refusal& c : cases) {
    CAPTURE(c.field);
    proto::JobConfig j = ok;
    c.spoil(j);
    Status st = ValidateJobConfig(j, 1);
    CHECK(st.code() == StatusCode::kInvalidArgument);
    CHECK(st.message().find(c.field) != std::string::npos);
  }
}

// What a job with an insider must end as: every daemon done after all
// `rounds`, the aggregator's accuracy within 2 points of `base` (the run in
// which the insider never answers), and its model that run's `silent_model`
// bit for bit (nothing the insider sent was used).
inline void CheckAsIfSilent(const std::vector<proto::JobStatus>& status, NodeId aggregator,
                            std::uint64_t rounds, double base, const std::vector<float>& model,
                            const std::vector<float>& silent_model) {
  for (const auto& s : status) {
    CHECK(s.state() == "done");
    CHECK(s.rounds_done() == rounds);
  }
  CHECK(status[aggregator].test_accuracy() >= base - 0.02);
  CHECK(model == silent_model);
}

// A FedFleet tweak that makes `peer` (a test's own endpoint on loopback port
// `port`) one of every daemon's peers.
inline std::function<void(NodeId, proto::NodeConfig&)> WithPeer(NodeId peer, std::uint16_t port) {
  return [peer, port](NodeId, proto::NodeConfig& c) {
    auto* p = c.add_peers();
    p->set_id(peer);
    p->set_address("127.0.0.1:" + std::to_string(port));
  };
}

// `peer` joins `job` as a client does (docs/protocol.md): a join to the
// aggregator until `joined` holds (a task came). False after 20 s.
inline bool JoinAsClient(FedFleet& fleet, Endpoint& peer, const proto::JobConfig& job,
                         const std::function<bool()>& joined) {
  const auto join = std::make_shared<const JobMessage>(
      JobTag(job), std::make_shared<const FedControlMessage>(FedControlMessage::What::kJoin, 0));
  return fleet.Poll(
      [&] {
        if (joined()) return true;
        if (peer.Connected(job.aggregator())) peer.Send(job.aggregator(), join);
        return false;
      },
      std::chrono::seconds(20));
}

}  // namespace murmur::node::testing
