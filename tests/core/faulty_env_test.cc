// FaultyEnv against a ManualEnv: every fault is observed exactly where the
// plan says it is (duplicates, reordering, delays, partitions), and random
// faults occur at their configured rate within binomial bounds.
#include "core/faulty_env.h"

#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "core/corrupted_message.h"
#include "core/manual_env.h"

namespace murmur {
namespace {

// A message that carries a sequence number; its wire form is the 8 number bytes
// followed by their sum, so a decoder can tell damaged bytes apart.
struct SeqMessage final : Message {
  explicit SeqMessage(std::uint64_t s) : seq(s) {}
  std::uint32_t kind() const override { return 7; }
  std::size_t EncodedSize() const override { return 9; }
  void EncodeTo(std::vector<std::uint8_t>& out) const override {
    std::uint8_t sum = 0;
    for (int b = 0; b < 8; ++b) {
      auto byte = static_cast<std::uint8_t>(seq >> (8 * b));
      out.push_back(byte);
      sum = static_cast<std::uint8_t>(sum + byte);
    }
    out.push_back(sum);
  }
  std::uint64_t seq;
};

Result<MessagePtr> DecodeSeq(std::uint32_t kind, std::span<const std::uint8_t> bytes) {
  if (kind != 7) return Status::InvalidArgument("unknown kind " + std::to_string(kind));
  if (bytes.size() != 9) return Status::DataLoss("seq message of " + std::to_string(bytes.size()) + " bytes");
  std::uint64_t seq = 0;
  std::uint8_t sum = 0;
  for (int b = 0; b < 8; ++b) {
    seq |= std::uint64_t{bytes[b]} << (8 * b);
    sum = static_cast<std::uint8_t>(sum + bytes[b]);
  }
  if (sum != bytes[8]) return Status::DataLoss("seq message checksum mismatch");
  return MessagePtr(std::make_shared<const SeqMessage>(seq));
}

std::uint64_t SeqOf(const MessagePtr& m) { return static_cast<const SeqMessage&>(*m).seq; }

std::vector<std::uint64_t> Seqs(ManualEnv& env, NodeId to = kAnyNode) {
  std::vector<std::uint64_t> out;
  for (const auto& s : env.outbox())
    if (to == kAnyNode || s.to == to) out.push_back(SeqOf(s.msg));
  return out;
}

void AddEverywhere(FaultPlan& plan, const LinkFaults& f) {
  plan.AddRule(FaultRule{kAnyNode, kAnyNode, Nanos(0), Nanos::max(), f});
}

// |k - n p| within 5 standard deviations of Binomial(n, p): a false failure
// has probability below 1e-6.
void CheckBinomial(std::uint64_t k, std::uint64_t n, double p) {
  const double mean = static_cast<double>(n) * p;
  const double sd = std::sqrt(mean * (1 - p));
  CAPTURE(k);
  CAPTURE(mean);
  CHECK(std::abs(static_cast<double>(k) - mean) <= 5 * sd);
}

TEST_CASE("EnvWrapper forwards the clock, timers, sending, randomness and Offload") {
  ManualEnv target(3, 9);
  EnvWrapper env(&target);
  CHECK(env.self() == 3);
  bool fired = false;
  env.StartTimer(Nanos(10), [&] { fired = true; });
  TimerId cancelled = env.StartTimer(Nanos(5), [] { FAIL("cancelled timer fired"); });
  env.CancelTimer(cancelled);
  target.AdvanceBy(Nanos(10));
  CHECK(fired);
  CHECK(env.Now() == Nanos(10));
  env.Send(4, std::make_shared<const SeqMessage>(1));
  REQUIRE(target.outbox().size() == 1);
  CHECK(target.outbox()[0].to == 4);
  CHECK(env.MakeRng(RngPurpose::kFault).NextU64() == Rng(9, 3, RngPurpose::kFault).NextU64());
  int order = 0;
  env.Offload(
      1.0, [&] { order = order * 10 + 1; }, [&] { order = order * 10 + 2; });
  CHECK(order == 12);
}

TEST_CASE("An empty plan passes every message through, in order, at once") {
  ManualEnv target(0);
  FaultPlan plan;
  FaultyEnv env(&target, &plan);
  for (std::uint64_t i = 0; i < 50; ++i) env.Send(1 + i % 3, std::make_shared<const SeqMessage>(i));
  auto seqs = Seqs(target);
  REQUIRE(seqs.size() == 50);
  for (std::uint64_t i = 0; i < 50; ++i) CHECK(seqs[i] == i);
  CHECK(target.pending_timers() == 0);
}

TEST_CASE("Drops occur at the configured rate, within binomial bounds") {
  const std::uint64_t n = 20000;
  for (double p : {0.01, 0.1, 0.3}) {
    for (std::uint64_t seed : {1, 2, 3}) {
      CAPTURE(p);
      CAPTURE(seed);
      ManualEnv target(0, seed);
      LinkFaults f;
      f.drop = p;
      FaultPlan plan;
      AddEverywhere(plan, f);
      FaultyEnv env(&target, &plan);
      for (std::uint64_t i = 0; i < n; ++i) env.Send(1, std::make_shared<const SeqMessage>(i));
      const std::uint64_t delivered = target.outbox().size();
      CHECK(env.stats().dropped == n - delivered);
      CheckBinomial(env.stats().dropped, n, p);
      // The survivors keep their order.
      auto seqs = Seqs(target);
      for (std::size_t i = 1; i < seqs.size(); ++i) CHECK(seqs[i - 1] < seqs[i]);
    }
  }
}

TEST_CASE("Duplicates: probability 1 sends every message twice in a row, and 0.25 at its rate") {
  {
    ManualEnv target(0);
    LinkFaults f;
    f.duplicate = 1;
    FaultPlan plan;
    AddEverywhere(plan, f);
    FaultyEnv env(&target, &plan);
    for (std::uint64_t i = 0; i < 10; ++i) env.Send(1, std::make_shared<const SeqMessage>(i));
    auto seqs = Seqs(target);
    REQUIRE(seqs.size() == 20);
    for (std::uint64_t i = 0; i < 10; ++i) {
      CHECK(seqs[2 * i] == i);
      CHECK(seqs[2 * i + 1] == i);
      CHECK(target.outbox()[2 * i].msg == target.outbox()[2 * i + 1].msg);  // the same object, twice
    }
    CHECK(env.stats().duplicated == 10);
  }
  ManualEnv target(0, 4);
  LinkFaults f;
  f.duplicate = 0.25;
  FaultPlan plan;
  AddEverywhere(plan, f);
  FaultyEnv env(&target, &plan);
  const std::uint64_t n = 20000;
  for (std::uint64_t i = 0; i < n; ++i) env.Send(1, std::make_shared<const SeqMessage>(i));
  CHECK(target.outbox().size() == n + env.stats().duplicated);
  CheckBinomial(env.stats().duplicated, n, 0.25);
}

TEST_CASE("Reorder: probability 1 swaps each pair of messages on a link, links independently") {
  ManualEnv target(0);
  LinkFaults f;
  f.reorder = 1;
  FaultPlan plan;
  AddEverywhere(plan, f);
  FaultyEnv env(&target, &plan);
  // To node 1: 0..5; to node 2: 10..13, interleaved.
  for (std::uint64_t i = 0; i < 6; ++i) {
    env.Send(1, std::make_shared<const SeqMessage>(i));
    if (i < 4) env.Send(2, std::make_shared<const SeqMessage>(10 + i));
  }
  CHECK(Seqs(target, 1) == std::vector<std::uint64_t>{1, 0, 3, 2, 5, 4});
  CHECK(Seqs(target, 2) == std::vector<std::uint64_t>{11, 10, 13, 12});
  CHECK(env.stats().reordered == 5);  // 0, 2, 4 to node 1; 10, 12 to node 2
  CHECK(target.pending_timers() == 0);
}

TEST_CASE("A held message that nothing overtakes is released after reorder_hold") {
  ManualEnv target(0);
  LinkFaults f;
  f.reorder = 1;
  f.reorder_hold = std::chrono::milliseconds(30);
  FaultPlan plan;
  AddEverywhere(plan, f);
  FaultyEnv env(&target, &plan);
  env.Send(1, std::make_shared<const SeqMessage>(7));
  target.AdvanceBy(std::chrono::milliseconds(30) - Nanos(1));
  CHECK(target.outbox().empty());
  target.AdvanceBy(Nanos(1));
  CHECK(Seqs(target) == std::vector<std::uint64_t>{7});
  // The next message is held again, and released by the one after it.
  env.Send(1, std::make_shared<const SeqMessage>(8));
  env.Send(1, std::make_shared<const SeqMessage>(9));
  CHECK(Seqs(target) == std::vector<std::uint64_t>{7, 9, 8});
  CHECK(target.pending_timers() == 0);
}

TEST_CASE("Delay: fixed plus jitter, each copy between delay and delay + jitter") {
  ManualEnv target(0, 5);
  LinkFaults f;
  f.delay = std::chrono::milliseconds(20);
  f.delay_jitter = std::chrono::milliseconds(10);
  FaultPlan plan;
  AddEverywhere(plan, f);
  FaultyEnv env(&target, &plan);
  const int n = 1000;
  for (int i = 0; i < n; ++i) env.Send(1, std::make_shared<const SeqMessage>(i));
  target.AdvanceBy(std::chrono::milliseconds(20) - Nanos(1));
  CHECK(target.outbox().empty());
  target.AdvanceBy(std::chrono::milliseconds(5) + Nanos(1));
  // U[0, 10 ms): about half arrive by 25 ms.
  CheckBinomial(target.outbox().size(), n, 0.5);
  target.AdvanceBy(std::chrono::milliseconds(5));
  CHECK(target.outbox().size() == static_cast<std::size_t>(n));
  CHECK(env.stats().delayed == static_cast<std::uint64_t>(n));
  // Independent jitter reorders: the sequence is not sorted any more.
  auto seqs = Seqs(target);
  CHECK(!std::is_sorted(seqs.begin(), seqs.end()));
}

TEST_CASE("A partition blocks exactly the cross-partition messages within its window") {
  const NodeId n = 8;
  auto windows = ParsePartitions("0-3|4-7@10s-70s", n).value();
  FaultPlan plan;
  REQUIRE(plan.AddPartition(windows[0]).ok());
  const std::vector<Nanos> times = {Nanos(0),
                                    std::chrono::seconds(10) - Nanos(1),
                                    std::chrono::seconds(10),
                                    std::chrono::seconds(40),
                                    std::chrono::seconds(70) - Nanos(1),
                                    std::chrono::seconds(70)};
  for (NodeId from = 0; from < n; ++from) {
    ManualEnv target(from);
    FaultyEnv env(&target, &plan);
    std::uint64_t sent = 0;
    for (Nanos t : times) {
      target.AdvanceTo(t);
      for (NodeId to = 0; to < n; ++to) env.Send(to, std::make_shared<const SeqMessage>(sent++));
    }
    // Replay the outbox against the truth: blocked iff different halves and t in [10 s, 70 s).
    std::size_t k = 0;
    std::uint64_t seq = 0;
    for (Nanos t : times) {
      for (NodeId to = 0; to < n; ++to, ++seq) {
        const bool blocked =
            (from < 4) != (to < 4) && t >= std::chrono::seconds(10) && t < std::chrono::seconds(70);
        CAPTURE(from);
        CAPTURE(to);
        CAPTURE(t.count());
        if (blocked) continue;
        REQUIRE(k < target.outbox().size());
        CHECK(target.outbox()[k].to == to);
        CHECK(SeqOf(target.outbox()[k].msg) == seq);
        ++k;
      }
    }
    CHECK(k == target.outbox().size());
    CHECK(env.stats().partitioned == 4 * 3);  // 4 foreign peers x 3 sending times in the window
  }
}

TEST_CASE("A partition toggled by hand applies from the next message until cleared") {
  FaultPlan plan;
  ManualEnv target(0);
  FaultyEnv env(&target, &plan);
  env.Send(1, std::make_shared<const SeqMessage>(0));
  REQUIRE(plan.SetManualPartition({{0}, {1, 2}}).ok());
  env.Send(1, std::make_shared<const SeqMessage>(1));
  env.Send(2, std::make_shared<const SeqMessage>(2));
  env.Send(3, std::make_shared<const SeqMessage>(3));  // node 3 is in no group
  plan.ClearManualPartition();
  env.Send(1, std::make_shared<const SeqMessage>(4));
  CHECK(Seqs(target) == std::vector<std::uint64_t>{0, 3, 4});
  CHECK(!plan.SetManualPartition({{0, 1}, {1}}).ok());  // node 1 twice
  CHECK(!plan.SetManualPartition({{0, 1}}).ok());       // one group cuts nothing
}

TEST_CASE("Rules apply per link and per time window, and the last matching rule wins") {
  FaultPlan plan;
  LinkFaults all_drop;
  all_drop.drop = 0.999;
  LinkFaults none;
  plan.AddRule(FaultRule{kAnyNode, kAnyNode, Nanos(0), Nanos::max(), all_drop});
  plan.AddRule(FaultRule{0, 2, Nanos(0), Nanos::max(), none});  // link 0 -> 2 clean
  plan.AddRule(FaultRule{kAnyNode, 3, std::chrono::seconds(5), std::chrono::seconds(6), none});  // 5-6 s to 3
  CHECK(plan.FaultsFor(0, 1, Nanos(0)).drop == 0.999);
  CHECK(plan.FaultsFor(0, 2, Nanos(0)).drop == 0);
  CHECK(plan.FaultsFor(2, 0, Nanos(0)).drop == 0.999);  // links are directed
  CHECK(plan.FaultsFor(1, 3, std::chrono::seconds(4)).drop == 0.999);
  CHECK(plan.FaultsFor(1, 3, std::chrono::seconds(5)).drop == 0);
  CHECK(plan.FaultsFor(1, 3, std::chrono::seconds(6)).drop == 0.999);
  ManualEnv target(0);
  FaultyEnv env(&target, &plan);
  for (std::uint64_t i = 0; i < 100; ++i) env.Send(2, std::make_shared<const SeqMessage>(i));
  CHECK(target.outbox().size() == 100);
}

TEST_CASE("The same seed injects the same faults and another seed does not") {
  auto run = [](std::uint64_t seed) {
    ManualEnv target(2, seed);
    LinkFaults f;
    f.drop = 0.2;
    f.duplicate = 0.2;
    f.reorder = 0.2;
    FaultPlan plan;
    AddEverywhere(plan, f);
    FaultyEnv env(&target, &plan);
    for (std::uint64_t i = 0; i < 500; ++i) env.Send(i % 4, std::make_shared<const SeqMessage>(i));
    target.AdvanceBy(std::chrono::seconds(1));
    return Seqs(target);
  };
  CHECK(run(11) == run(11));
  CHECK(run(11) != run(12));
}

TEST_CASE("Corrupted messages keep their kind, lose 1..max_cut bytes, and a checking decoder rejects them") {
  ManualEnv target(0, 3);
  LinkFaults f;
  f.corrupt = 1;
  f.corrupt_flips = 1;
  f.corrupt_max_cut = 0;  // flips only: the checksum must catch them
  FaultPlan plan;
  AddEverywhere(plan, f);
  FaultyEnv env(&target, &plan);
  std::vector<std::uint64_t> got;
  struct Collect final : MessageSink {
    std::vector<std::uint64_t>* out;
    void OnMessage(NodeId, MessagePtr m) override { out->push_back(SeqOf(m)); }
  } collect;
  collect.out = &got;
  DecodingSink sink(&collect, DecodeSeq);
  const int n = 1000;
  for (int i = 0; i < n; ++i) env.Send(1, std::make_shared<const SeqMessage>(i));
  for (const auto& s : target.outbox()) {
    CHECK(s.msg->kind() == 7);
    CHECK(s.msg->EncodedSize() == 9);
    sink.OnMessage(0, s.msg);
  }
  // One changed byte always breaks an 8-bit sum (or the sum byte itself).
  CHECK(sink.rejected() == static_cast<std::uint64_t>(n));
  CHECK(got.empty());
  CHECK(env.stats().corrupted == static_cast<std::uint64_t>(n));
  // Clean messages pass through the sink untouched.
  sink.OnMessage(0, std::make_shared<const SeqMessage>(42));
  CHECK(got == std::vector<std::uint64_t>{42});

  Rng rng(1);
  SeqMessage original(5);
  for (int i = 0; i < 200; ++i) {
    auto c = CorruptedMessage::Make(original, rng, 0, 4);
    CHECK(c->EncodedSize() >= 5);
    CHECK(c->EncodedSize() <= 8);
  }
}

TEST_CASE("Partition specs parse with ranges, lists, units and open ends, and bad ones are named") {
  auto w = ParsePartitions("0-2,5|3,4@1.5s-2500ms; 0|1@10-", 8).value();
  REQUIRE(w.size() == 2);
  CHECK(w[0].groups == std::vector<std::vector<NodeId>>{{0, 1, 2, 5}, {3, 4}});
  CHECK(w[0].start == std::chrono::milliseconds(1500));
  CHECK(w[0].end == std::chrono::milliseconds(2500));
  CHECK(w[1].start == std::chrono::seconds(10));
  CHECK(w[1].end == Nanos::max());
  auto whole = ParsePartitions("0|1", 2).value();
  CHECK(whole[0].start == Nanos(0));
  CHECK(whole[0].end == Nanos::max());
  CHECK(ParsePartitions("", 4).value().empty());
  for (const char* bad : {"0-9|1", "a|1", "3-1|0", "0|1@5", "0|1@5-2", "0|1@x-2", "0|1@-1-2"}) {
    CAPTURE(bad);
    auto r = ParsePartitions(bad, 8);
    REQUIRE(!r.ok());
    CHECK(r.status().message().find("partition") != std::string::npos);
  }
  FaultPlan plan;
  CHECK(!plan.AddPartition(ParsePartitions("0-3|3-5", 8).value()[0]).ok());
}

TEST_CASE("Destroying a FaultyEnv cancels the timers it started") {
  ManualEnv target(0);
  LinkFaults f;
  f.delay = std::chrono::seconds(1);
  FaultPlan plan;
  AddEverywhere(plan, f);
  {
    FaultyEnv env(&target, &plan);
    env.Send(1, std::make_shared<const SeqMessage>(1));
    CHECK(target.pending_timers() == 1);
  }
  CHECK(target.pending_timers() == 0);
  target.AdvanceBy(std::chrono::seconds(2));
  CHECK(target.outbox().empty());
}

}  // namespace
}  // namespace murmur
