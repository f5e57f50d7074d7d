// A certified insider in a real SecAgg+ job (docs/security.md "Insiders",
// docs/protocol.md "Complaints"): four daemons run FedAvg with secure
// aggregation (aggregator 1, clients 0, 2 and 3); node 4 is a peer holding a
// valid certificate for its own id that joins the job and runs SecAgg+ with
// correctly signed keys but seals random bytes as its shares. Before
// complaints, every such round aborted and the model never moved. The truth
// is the run in which node 4 joins and never answers: every round then sums
// the three honest clients (the first 3 after their key timeout, then node 4
// is left out as silent). With the insider, each honest client complains of
// node 4's shares, the aggregator leaves node 4 out of the round, refuses it
// as `bad_shares` (three complaints) and books it; the round sums the same
// three honest inputs, so the global model equals that run's bit for bit.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "core/env_wrapper.h"
#include "federated/messages.h"
#include "federated/secagg_client.h"
#include "federated/server.h"
#include "node/job/federated_control.h"
#include "node/job/index_env.h"
#include "node/job/job_message.h"
#include "tests/node/fed_fleet.h"

namespace murmur::node {
namespace {

using federated::FedKind;
using federated::FedMessage;
using federated::SecAggMessage;
using federated::SecAggStage;
using testing::FedFleet;
using testing::Sample;

constexpr NodeId kAggregator = 1;
constexpr NodeId kInsider = 4;
constexpr NodeId kDaemons = 4;
constexpr std::uint64_t kRounds = 6;
// The engine's numbering (node/job/index_env.h): clients 0 .. 3, the server 4.
const IdMap kMap{kAggregator, kDaemons};

// What node 4's SecAgg+ client sends goes to the aggregator inside the job's
// envelope; its ShareKeys carry random bytes in place of every sealed share.
class InsiderEnv final : public EnvWrapper {
 public:
  InsiderEnv(Env& target, std::uint64_t tag) : EnvWrapper(&target), tag_(tag) {}
  NodeId self() const override { return kMap.ToIndex(kInsider); }
  void Send(NodeId to, MessagePtr msg) override {
    if (msg->kind() == federated::kSecAggMessageKind) {
      const auto& m = static_cast<const SecAggMessage&>(*msg);
      if (m.stage() == SecAggStage::kShareKeys) {
        federated::SecAggBody b = m.body();
        for (auto& sealed : b.sealed) {
          for (auto& byte : sealed.bytes) byte = static_cast<std::uint8_t>(noise_.NextU32());
        }
        msg = std::make_shared<const SecAggMessage>(m.stage(), m.round(), std::move(b));
        ++garbled;
      }
    }
    EnvWrapper::Send(kMap.ToNode(to), std::make_shared<const JobMessage>(tag_, std::move(msg)));
  }
  std::atomic<int> garbled{0};

 private:
  std::uint64_t tag_;
  Rng noise_{9, 0, RngPurpose::kGeneric};
};

class Insider final : public MessageSink {
 public:
  Insider(testing::Endpoint& ep, std::uint64_t tag, bool answers) : env_(ep.env(), tag), answers_(answers) {
    for (NodeId c = 0; c < kDaemons; ++c) identities_.push_back(testing::Seeded(kMap.ToNode(c) + 1));
  }
  void OnMessage(NodeId from, MessagePtr msg) override {
    if (msg->kind() != kJobMessageKind || from != kAggregator) return;
    const auto& job = static_cast<const JobMessage&>(*msg);
    if (job.inner()->kind() == federated::kSecAggMessageKind) {
      if (client_) client_->OnMessage(kMap.ToIndex(from), static_cast<const SecAggMessage&>(*job.inner()));
      return;
    }
    if (job.inner()->kind() != federated::kFedMessageKind) return;
    const auto& task = static_cast<const FedMessage&>(*job.inner());
    if (task.header().kind != FedKind::kTask) return;
    ++tasks;
    if (!answers_) return;
    federated::SecAggClientOptions o;  // the job's SecAgg+ parameters are the defaults
    o.identity = &identities_[kMap.ToIndex(kInsider)];
    o.directory = [this](NodeId c) -> const crypto::SignPublicKey* {
      return c < identities_.size() ? &identities_[c].public_key() : nullptr;
    };
    client_ =
        std::make_unique<federated::SecAggClient>(env_, kMap.ToIndex(kAggregator), task.header().round, o);
    client_->Start();
    // [w Delta, w, w loss] of a client that trained nothing.
    client_->SetInput(std::vector<double>(task.updates()[0]->size() + 2, 0.0));
  }
  std::atomic<int> tasks{0};
  InsiderEnv env_;

 private:
  bool answers_;
  std::vector<crypto::Identity> identities_;
  std::unique_ptr<federated::SecAggClient> client_;
};

struct Outcome {
  std::vector<proto::JobStatus> status;  // daemons 0 .. 3
  std::vector<std::string> metrics;      // their /metrics at the end
  std::vector<float> model;              // the aggregator's
  int tasks = 0, garbled = 0;
};

Outcome Run(bool answers) {
  proto::JobConfig job = testing::BlobsJob("secagg-insider", "fedavg", kAggregator, kDaemons + 1);
  job.mutable_spec()->set_rounds(kRounds);
  job.mutable_spec()->set_eval_every(kRounds);
  job.mutable_spec()->set_secure_aggregation(true);
  job.mutable_spec()->set_secagg_timeout(2);  // a silent node 4 costs 2 s a round
  TransportOptions to;
  // It speaks no membership: the daemons' probes, undecodable here, are not held against them.
  to.scoring.invalid_update_penalty = 0;
  testing::Endpoint node4(
      kInsider, testing::Creds(testing::Seeded(60), kInsider + 1, "fleet", 3600, crypto::kRoleNode, kInsider),
      testing::Policy(testing::Seeded(60)), to);
  REQUIRE(node4.start_status().ok());
  FedFleet fleet(kDaemons, testing::WithPeer(kInsider, node4.port()));
  Insider insider(node4, JobTag(job), answers);
  node4.Do([&] { node4.env().SetSink(&insider); });
  fleet.SubmitAll(job);
  REQUIRE(testing::JoinAsClient(fleet, node4, job, [&] { return insider.tasks > 0; }));
  REQUIRE(fleet.WaitDone(std::chrono::seconds(90)));
  Outcome out;
  for (NodeId i = 0; i < kDaemons; ++i) {
    out.status.push_back(fleet.Status(i));
    out.metrics.push_back(testing::Metrics(fleet.daemons[i]->metrics_port()));
  }
  fleet.Stop();
  out.model = fleet.daemons[kAggregator]->params();
  out.tasks = insider.tasks;
  out.garbled = insider.env_.garbled;
  node4.Shutdown();
  return out;
}

// Two runs of 10-20 s each: labelled slow.
TEST_SUITE("slow") {
  TEST_CASE(
      "A certified SecAgg insider sealing random shares is excluded from every round and booked: the "
      "global model is the silent run's bit for bit") {
    const Outcome silent = Run(false);
    const double base = silent.status[kAggregator].test_accuracy();
    MESSAGE("node 4 silent: accuracy " << base << " after " << silent.tasks << " tasks");
    // Silent for its first 3 tasks while counted alive, it is left out of the next 5 rounds.
    REQUIRE(silent.tasks == static_cast<int>(federated::kSilentTasks));
    REQUIRE(base > 0.5);
    const Outcome o = Run(true);
    const double acc = o.status[kAggregator].test_accuracy();
    MESSAGE("random shares: accuracy " << acc << ", " << o.garbled << " share sets garbled; model "
                                       << std::string(o.model == silent.model ? "equal to" : "not equal to")
                                       << " the silent run's");
    REQUIRE(o.garbled == static_cast<int>(kRounds));
    testing::CheckAsIfSilent(o.status, kAggregator, kRounds, base, o.model, silent.model);
    const std::string& agg = o.metrics[kAggregator];
    CHECK(Sample(agg, "murmur_updates_refused_total{reason=\"bad_shares\"}") == kRounds);
    CHECK(Sample(agg, "murmur_peer_offences_total") >= kRounds);
    // The honest clients complained and booked nobody; the aggregator booked only node 4.
    for (NodeId c : {0u, 2u, 3u}) {
      CAPTURE(c);
      CHECK(Sample(o.metrics[c], "murmur_peer_offences_total") == 0);
    }
  }
}  // TEST_SUITE("slow")

}  // namespace
}  // namespace murmur::node
