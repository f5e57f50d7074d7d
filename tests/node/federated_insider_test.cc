// A certified insider in a real federated job (docs/security.md "Insiders",
// "Federated control is the aggregator's"): three daemons run FedAvg
// (aggregator 1, clients 0 and 2); client 3 is a peer holding a valid
// certificate for its own id that joins the job and answers each task with a
// crafted result, or tells the other clients the job is done and sends them
// tasks of its own. The truth is the run in which node 3 joins and never
// answers: the aggregator then closes its first 3 rounds at their deadline
// (and then leaves node 3 out as silent) on the two honest clients' results,
// which is exactly what it must do with a refused
// result (refused results count as the client's answer, so those rounds close
// as soon as the honest results are in). Every daemon ends every round within
// 2 points of that run's accuracy, refuses every crafted message with its
// reason, and books node 3 and nobody else; and since nothing node 3 sent
// was used, the global model equals that run's bit for bit. A negative weight,
// a non-finite loss or non-finite values do not even decode (docs/protocol.md
// section 8): the aggregator counts them as undecodable and books node 3.
#include <doctest/doctest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "federated/messages.h"
#include "federated/server.h"
#include "node/job/federated_control.h"
#include "node/job/job_message.h"
#include "tests/node/fed_fleet.h"

namespace murmur::node {
namespace {

using federated::FedHeader;
using federated::FedKind;
using federated::FedMessage;
using testing::FedFleet;
using testing::Sample;

constexpr NodeId kAggregator = 1;
constexpr NodeId kInsider = 3;
constexpr std::uint64_t kRounds = 8;

// What node 3 does: `result` crafts its answer to a task (nullptr: no answer);
// `spoof`, on its first task, sends the honest clients a "done" and a task of its own.
struct Behaviour {
  std::string what;
  std::function<MessagePtr(const FedMessage& task)> result;
  bool spoof = false;
  // The aggregator's counter that must count each crafted result: a refusal by reason, or
  // the decoder's (a negative weight or a non-finite loss does not decode, docs/protocol.md).
  std::string counted = {};
};

class Insider final : public MessageSink {
 public:
  Insider(testing::Endpoint& ep, std::uint64_t tag, const Behaviour& b) : ep_(ep), tag_(tag), b_(b) {}
  void OnMessage(NodeId from, MessagePtr msg) override {
    if (msg->kind() != kJobMessageKind || from != kAggregator) return;
    const auto& job = static_cast<const JobMessage&>(*msg);
    if (job.tag() != tag_ || job.inner()->kind() != federated::kFedMessageKind) return;
    const auto& task = static_cast<const FedMessage&>(*job.inner());
    if (task.header().kind != FedKind::kTask) return;
    ++tasks;
    if (b_.spoof && tasks == 1) {
      // The job's end and its tasks are the aggregator's to say.
      const auto done = std::make_shared<const FedControlMessage>(FedControlMessage::What::kDone, 1);
      FedHeader h = task.header();
      const auto poison = std::make_shared<const FedMessage>(
          h, std::vector<federated::UpdatePtr>{
                 compression::DenseF32Update(std::vector<float>(task.updates()[0]->size(), 1e30f))});
      for (NodeId c : {0u, 2u}) {
        ep_.env().Send(c, std::make_shared<const JobMessage>(tag_, done));
        ep_.env().Send(c, std::make_shared<const JobMessage>(tag_, poison));
      }
      spoofed += 4;
    }
    if (b_.result == nullptr) return;
    ep_.env().Send(kAggregator, std::make_shared<const JobMessage>(tag_, b_.result(task)));
    ++answered;
  }
  std::atomic<int> tasks{0}, answered{0}, spoofed{0};

 private:
  testing::Endpoint& ep_;
  std::uint64_t tag_;
  const Behaviour& b_;
};

// A result of round `task`'s round: a difference of `value` everywhere, `weight`, `loss`.
MessagePtr Result(const FedMessage& task, float value, double weight, double loss = 0.5) {
  FedHeader h;
  h.kind = FedKind::kResult;
  h.round = task.header().round;
  h.steps = 20;
  h.weight = weight;
  h.loss = loss;
  return std::make_shared<const FedMessage>(h, std::vector<federated::UpdatePtr>{compression::DenseF32Update(
                                                   std::vector<float>(task.updates()[0]->size(), value))});
}

struct Outcome {
  std::vector<proto::JobStatus> status;  // daemons 0, 1, 2
  std::vector<std::string> metrics;      // their /metrics at the end
  std::vector<float> model;              // the aggregator's
  int tasks = 0, answered = 0, spoofed = 0;
};

Outcome Run(const Behaviour& b) {
  proto::JobConfig job = testing::BlobsJob("insider", "fedavg", kAggregator, 4);
  job.mutable_spec()->set_rounds(kRounds);
  job.mutable_spec()->set_deadline(2);  // a silent node 3 costs 2 s a round
  TransportOptions to;
  // It speaks no membership: the daemons' probes, undecodable here, are not held against them.
  to.scoring.invalid_update_penalty = 0;
  testing::Endpoint node3(kInsider,
                          testing::Creds(crypto::Identity(testing::Seeded(60)), kInsider + 1, "fleet", 3600,
                                         crypto::kRoleNode, kInsider),
                          testing::Policy(testing::Seeded(60)), to);
  REQUIRE(node3.start_status().ok());
  FedFleet fleet(3, testing::WithPeer(kInsider, node3.port()));
  Insider insider(node3, JobTag(job), b);
  node3.Do([&] { node3.env().SetSink(&insider); });
  fleet.SubmitAll(job);
  REQUIRE(testing::JoinAsClient(fleet, node3, job, [&] { return insider.tasks > 0; }));
  REQUIRE(fleet.WaitDone(std::chrono::seconds(90)));
  Outcome out;
  for (NodeId i = 0; i < 3; ++i) {
    out.status.push_back(fleet.Status(i));
    out.metrics.push_back(testing::Metrics(fleet.daemons[i]->metrics_port()));
  }
  fleet.Stop();
  out.model = fleet.daemons[kAggregator]->params();
  out.tasks = insider.tasks;
  out.answered = insider.answered;
  out.spoofed = insider.spoofed;
  node3.Shutdown();
  return out;
}

// Six runs of 5-20 s each: labelled slow.
TEST_SUITE("slow") {
  constexpr const char* kImplausible = "murmur_updates_refused_total{reason=\"implausible\"}";
  constexpr const char* kUndecodable = "murmur_messages_undecodable_total";

  TEST_CASE(
      "A certified federated insider sending absurd weights or 1e30 or NaN results or a 'done' and tasks of "
      "its own: every daemon finishes every round at the insider-free accuracy and only node 3 is booked") {
    const Outcome silent = Run(Behaviour{"silent", nullptr, false});
    const double base = silent.status[kAggregator].test_accuracy();
    MESSAGE("node 3 silent: accuracy " << base << " after " << silent.tasks << " tasks");
    // Silent for its first 3 tasks while counted alive, it is left out of the next 5 rounds.
    REQUIRE(silent.tasks == static_cast<int>(federated::kSilentTasks));
    REQUIRE(base > 0.5);
    for (const auto& s : silent.status) CHECK(s.rounds_done() == kRounds);

    const double huge = 1e300, nan = std::numeric_limits<double>::quiet_NaN();
    const std::vector<Behaviour> cases = {
        {"weight 1e300, zero difference", [&](const FedMessage& t) { return Result(t, 0, huge); }, false,
         kImplausible},
        {"weight 0, difference 1e30", [](const FedMessage& t) { return Result(t, 1e30f, 0); }, false,
         kImplausible},
        {"weight -1", [](const FedMessage& t) { return Result(t, 0.01f, -1); }, false, kUndecodable},
        {"difference 1e30", [](const FedMessage& t) { return Result(t, 1e30f, 1); }, false, kImplausible},
        {"NaN loss", [&](const FedMessage& t) { return Result(t, 0, 1, nan); }, false, kUndecodable},
        {"NaN values",
         [](const FedMessage& t) { return Result(t, std::numeric_limits<float>::quiet_NaN(), 1); }, false,
         kUndecodable},
        {"'done after round 1' and a task of 1e30 to the clients, results of 1e30",
         [](const FedMessage& t) { return Result(t, 1e30f, 1); }, true, kImplausible},
    };
    for (const Behaviour& b : cases) {
      CAPTURE(b.what);
      const Outcome o = Run(b);
      const double acc = o.status[kAggregator].test_accuracy();
      MESSAGE(b.what << ": accuracy " << acc << ", " << o.answered << " crafted results, " << o.spoofed
                     << " spoofed control messages; model "
                     << std::string(o.model == silent.model ? "equal to" : "not equal to")
                     << " the silent run's");
      // A refused result answers its task; one that does not decode is silence, and after 3 such
      // tasks node 3 is left out as silent for the rest of the job.
      const std::uint64_t tasks = b.counted == kUndecodable ? federated::kSilentTasks : kRounds;
      REQUIRE(o.answered == static_cast<int>(tasks));
      // Refused, a crafted result is as if node 3 had said nothing: the same global model, bit for bit.
      testing::CheckAsIfSilent(o.status, kAggregator, kRounds, base, o.model, silent.model);
      // The aggregator refused every crafted result and booked node 3 for it.
      const std::string& agg = o.metrics[kAggregator];
      CHECK(Sample(agg, b.counted) == tasks);
      CHECK(Sample(agg, "murmur_peer_offences_total") >= tasks);
      // The clients refused the spoofed "done" and tasks, and booked node 3 for them;
      // without them, the clients booked nobody.
      for (NodeId c : {0u, 2u}) {
        CAPTURE(c);
        const std::string& m = o.metrics[c];
        const double refused = Sample(m, "murmur_updates_refused_total{reason=\"not_aggregator\"}");
        CHECK(refused == (b.spoof ? 2 : 0));
        CHECK(Sample(m, "murmur_peer_offences_total") == refused);
      }
    }
  }
}  // TEST_SUITE("slow")

}  // namespace
}  // namespace murmur::node
