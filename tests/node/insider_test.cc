// A certified insider in a real murmurd job (docs/security.md "Insiders"):
// three daemons run D-PSGD on a ring of four; node 3 is a peer holding a
// valid certificate for its own id that answers each model its neighbours
// (0 and 2) send it with a crafted model of the same round. The honest
// daemons finish every round within 2 points of the accuracy they reach
// when node 3 sends nothing, refuse every crafted model on their /metrics
// with its reason (the decoder refuses NaN), book node 3 until it is
// graylisted, and book nobody else. A model labelled for a later round is
// held for that round, and no round is skipped on its word.
#include <doctest/doctest.h>

#include <asio.hpp>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "compression/values.h"
#include "gossip/messages.h"
#include "node/job/job_message.h"
#include "tests/node/daemon_cluster.h"

namespace murmur::node {
namespace {

using gossip::UpdatePtr;
using testing::Cluster;
using testing::Metrics;
using testing::Sample;

using Craft = std::function<UpdatePtr(std::span<const float>)>;
using Relabel = std::function<std::uint64_t(std::uint64_t)>;

// Node 3: answers each model of round r from j with craft(that model), labelled
// relabel(r) (r when relabel is empty).
class Insider final : public MessageSink {
 public:
  Insider(testing::Endpoint& ep, Craft craft, Relabel relabel)
      : ep_(ep), craft_(std::move(craft)), relabel_(std::move(relabel)) {}
  void OnMessage(NodeId from, MessagePtr msg) override {
    if (msg->kind() != kJobMessageKind) return;
    const auto& job = static_cast<const JobMessage&>(*msg);
    if (job.inner()->kind() != gossip::kGossipMessageKind) return;
    const auto& m = static_cast<const gossip::GossipMessage&>(*job.inner());
    if (m.channel() != gossip::Channel::kModel || craft_ == nullptr) return;
    auto reply = std::make_shared<const gossip::GossipMessage>(gossip::Channel::kModel,
                                                               relabel_ ? relabel_(m.round()) : m.round(),
                                                               0.0, craft_(m.update().ToDense()));
    ep_.env().Send(from, std::make_shared<const JobMessage>(job.tag(), reply));
    ++answered;
  }
  std::atomic<int> answered{0};

 private:
  testing::Endpoint& ep_;
  Craft craft_;
  Relabel relabel_;
};

struct Outcome {
  std::vector<std::uint64_t> rounds;  // daemons 0, 1, 2
  double accuracy = 0;                // their mean test accuracy
  std::vector<std::string> metrics;   // their /metrics at the end
  int answered = 0;
};

constexpr std::uint64_t kRounds = 30;

Outcome RunWithInsider(Craft craft, Relabel relabel = {}) {
  Cluster cluster;
  cluster.job_tweak = [](proto::JobConfig& j) {
    j.mutable_spec()->set_round_timeout(3);  // a stall on node 3 costs 3 s, not 30
  };
  // Daemons stay up 4 s after their job, so that the test reads their /metrics.
  cluster.tweak = [](NodeId, proto::NodeConfig& c) { c.set_linger(4); };
  const auto coordinator = testing::Seeded(100);  // the cluster's coordinator
  TransportOptions to;
  to.listen_port = cluster.ports[3];
  // It speaks no membership: the daemons' probes, undecodable here, are not held against them.
  to.scoring.invalid_update_penalty = 0;
  testing::Endpoint node3(3, testing::Creds(coordinator, 4, "fleet", 3600, crypto::kRoleNode, 3),
                          testing::Policy(coordinator), to);
  REQUIRE(node3.start_status().ok());
  Insider insider(node3, std::move(craft), std::move(relabel));
  node3.Do([&] { node3.env().SetSink(&insider); });

  std::vector<std::unique_ptr<Daemon>> daemons;
  for (NodeId i = 0; i < 3; ++i) {
    auto d = Daemon::Create(cluster.Config(i, kRounds));
    REQUIRE_MESSAGE(d.ok(), d.status().ToString());
    daemons.push_back(std::move(d).value());
  }
  std::vector<std::thread> threads;
  std::vector<std::string> metrics(3);
  for (NodeId i = 0; i < 3; ++i) threads.emplace_back([&, i] { CHECK(daemons[i]->Run().ok()); });
  // Every daemon's job done, read /metrics while they linger.
  REQUIRE(testing::WaitFor(
      [&] {
        for (auto& d : daemons)
          if (d->rounds_done() < kRounds) return false;
        return true;
      },
      std::chrono::seconds(120)));
  for (NodeId i = 0; i < 3; ++i) {
    try {
      metrics[i] = Metrics(daemons[i]->metrics_port());
    } catch (const std::exception&) {
      metrics[i].clear();  // already gone: the checks below that need it fail
    }
  }
  for (auto& t : threads) t.join();
  Outcome out;
  std::vector<std::vector<float>> models;
  for (auto& d : daemons) {
    out.rounds.push_back(d->rounds_done());
    models.push_back(d->params());
  }
  out.accuracy = testing::MeanBlobsAccuracy(models);
  out.metrics = std::move(metrics);
  out.answered = insider.answered;
  return out;
}

UpdatePtr Filled(std::size_t n, float v) { return compression::DenseF32Update(std::vector<float>(n, v)); }

// Eight runs of 13 s each: labelled slow.
TEST_SUITE("slow") {
  TEST_CASE(
      "A certified insider sending absurd or NaN or sparse or wrong-length or far-future models to its "
      "neighbours: "
      "the honest daemons finish every round at the insider-free accuracy and refuse and book it and "
      "nobody else") {
    const Outcome silent = RunWithInsider(nullptr);
    MESSAGE("node 3 silent: accuracy " << silent.accuracy);
    for (std::uint64_t r : silent.rounds) CHECK(r == kRounds);
    constexpr const char* kImplausible = "murmur_updates_refused_total{reason=\"implausible\"}";
    struct Case {
      std::string what;
      Craft craft;
      // The counter of daemons 0 and 2 that counts the crafted models (none: they are used).
      std::string counted;
      Relabel relabel = {};
    };
    const std::vector<Case> cases = {
        {"1e30", [](std::span<const float> x) { return Filled(x.size(), 1e30f); }, kImplausible},
        {"3.4e38", [](std::span<const float> x) { return Filled(x.size(), 3.4e38f); }, kImplausible},
        {"-50 x",
         [](std::span<const float> x) {
           std::vector<float> v(x.begin(), x.end());
           for (float& e : v) e *= -50;
           return compression::DenseF32Update(v);
         },
         kImplausible},
        // The update decoder refuses non-finite values (docs/compression.md).
        {"NaN",
         [](std::span<const float> x) { return Filled(x.size(), std::numeric_limits<float>::quiet_NaN()); },
         "murmur_messages_undecodable_total"},
        {"a sparse update in a 'compression: none' job",
         [](std::span<const float> x) {
           const std::vector<float> v = {0.5f, -0.5f};
           return std::make_shared<const compression::Update>(compression::Update::Sparse(
               x.size(), {0, 1}, compression::PackValues(v, {}, {compression::ValueType::kF32, 0, 0}, 0)));
         },
         "murmur_updates_refused_total{reason=\"wrong_encoding\"}"},
        {"one value too many",
         [](std::span<const float> x) {
           std::vector<float> v(x.begin(), x.end());
           v.push_back(0);
           return compression::DenseF32Update(v);
         },
         "murmur_updates_refused_total{reason=\"wrong_length\"}"},
        // Its own honest model labelled round 29 of 30: held for round 29, no catch-up on one word.
        {"the model it was sent, labelled round 29 of 30",
         [](std::span<const float> x) { return compression::DenseF32Update(x); }, "",
         [](std::uint64_t) { return kRounds - 1; }},
    };
    for (const Case& c : cases) {
      CAPTURE(c.what);
      const Outcome attacked = RunWithInsider(c.craft, c.relabel);
      MESSAGE(c.what << ": accuracy " << attacked.accuracy << ", " << attacked.answered
                     << " crafted models sent");
      for (std::uint64_t r : attacked.rounds) CHECK(r == kRounds);
      CHECK(attacked.accuracy >= silent.accuracy - 0.02);
      REQUIRE(attacked.answered > 0);
      for (const std::string& m : attacked.metrics) {
        REQUIRE(!m.empty());
        CHECK(Sample(m, "murmur_rounds_skipped_total") == 0);
        CHECK(Sample(m, "murmur_updates_refused_total{reason=\"not_finite\"}") == 0);
      }
      // Daemons 0 and 2 border node 3: each refused what reached it, booked it,
      // and graylisted it after ten; daemon 1 got nothing from it.
      for (NodeId i : {0u, 2u}) {
        CAPTURE(i);
        const std::string& m = attacked.metrics[i];
        if (c.counted.empty()) {
          CHECK(Sample(m, "murmur_peer_offences_total") == 0);
          continue;
        }
        const double counted = Sample(m, c.counted);
        CHECK(counted >= 1);
        CHECK(Sample(m, "murmur_peer_offences_total") >= counted);
        if (counted >= 11 && c.counted.find("refused") != std::string::npos)
          CHECK(Sample(m, "murmur_peer_graylistings_total") >= 1);
      }
      const std::string& m1 = attacked.metrics[1];
      if (!c.counted.empty()) CHECK(Sample(m1, c.counted) == 0);
      CHECK(Sample(m1, "murmur_peer_offences_total") == 0);
      CHECK(Sample(m1, "murmur_peer_graylistings_total") == 0);
    }
  }

}  // TEST_SUITE("slow")

}  // namespace
}  // namespace murmur::node
