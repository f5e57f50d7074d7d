// One Membership on a ManualEnv, facing members played by the test
// (tests/membership/harness.h): closed-form timing of Lifeguard's suspicion,
// probe order, round trips, refutation and the pinging of suspects.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <set>

#include "membership/membership.h"
#include "tests/membership/harness.h"

namespace murmur::membership {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::Harness;
using testing::KeyOf;

TEST_CASE("Suspicion times out at Lifeguard's Max, midway after one confirmation, at Min after K") {
  // Twelve members (this node included): Min = 5 * log10(12) * 1 s, Max = 6 * Min, K = 3.
  const double min_s = 5 * std::log10(12.0);
  const double max_s = 6 * min_s;
  struct Case {
    std::vector<NodeId> confirmers;
    double timeout_s;
  };
  const std::vector<Case> cases = {
      {{}, max_s},
      {{3}, max_s - (max_s - min_s) * std::log(2.0) / std::log(4.0)},
      {{3, 4}, max_s - (max_s - min_s) * std::log(3.0) / std::log(4.0)},
      {{3, 4, 5}, min_s},
  };
  for (const Case& c : cases) {
    CAPTURE(c.confirmers.size());
    Harness w(12);
    w.RunUntil(seconds(5));
    const Nanos t0 = w.env.Now();
    // Member 1 answers every probe but never refutes: only the suspicion's timer decides.
    w.Deliver(2, MembershipType::kSync, {{MemberState::kSuspect, 1, 0, 2, ""}});
    CHECK(w.StateOf(1) == MemberState::kSuspect);
    for (std::size_t i = 0; i < c.confirmers.size(); ++i) {
      w.RunUntil(t0 + milliseconds(500) * static_cast<int>(i + 1));
      w.Deliver(c.confirmers[i], MembershipType::kSync, {{MemberState::kSuspect, 1, 0, c.confirmers[i], ""}});
    }
    const Nanos deadline = t0 + Nanos(std::llround(c.timeout_s * 1e9));
    w.RunUntil(deadline - milliseconds(20));
    CHECK(w.StateOf(1) == MemberState::kSuspect);
    w.RunUntil(deadline + milliseconds(20));
    CHECK(w.StateOf(1) == MemberState::kDead);
    CHECK(w.m->stats().deaths_declared == 1);
    CHECK(w.observer.dead.at(1) == MemberState::kDead);
    // Everyone else answered: nobody else was suspected.
    CHECK(w.m->counts().alive == 10);
  }
}

TEST_CASE("Without dynamic suspicion the timeout is Min whatever the confirmations (SWIM)") {
  MembershipOptions o;
  o.dynamic_suspicion = false;
  Harness w(12, o);
  w.RunUntil(seconds(5));
  const Nanos t0 = w.env.Now();
  w.Deliver(2, MembershipType::kSync, {{MemberState::kSuspect, 1, 0, 2, ""}});
  const Nanos deadline = t0 + Nanos(std::llround(5 * std::log10(12.0) * 1e9));
  w.RunUntil(deadline - milliseconds(20));
  CHECK(w.StateOf(1) == MemberState::kSuspect);
  w.RunUntil(deadline + milliseconds(20));
  CHECK(w.StateOf(1) == MemberState::kDead);
}

TEST_CASE("Probes go round-robin over a fresh random permutation in every traversal (SWIM 4.3)") {
  Harness w(8);  // 7 members to probe; all answer, so every PING is a direct probe
  w.RunUntil(seconds(40));
  std::vector<NodeId> order;
  for (const auto& [to, msg] : w.sent) {
    if (msg->header().type == MembershipType::kPing) order.push_back(to);
  }
  REQUIRE(order.size() >= 35);
  std::set<std::vector<NodeId>> traversals;
  for (std::size_t t = 0; t < 5; ++t) {
    std::vector<NodeId> block(order.begin() + 7 * t, order.begin() + 7 * (t + 1));
    traversals.insert(block);
    std::sort(block.begin(), block.end());
    CHECK(block == std::vector<NodeId>{1, 2, 3, 4, 5, 6, 7});
  }
  CHECK(traversals.size() > 1);  // reshuffled, not one fixed order
}

TEST_CASE("A member's round trip is the smoothed RTT of RFC 6298 over its direct probes' PING-to-ACK times") {
  Harness w(2);  // one member, probed every period; the test answers after chosen delays
  w.answering.clear();
  const int delays_ms[] = {40, 8, 8, 120, 8};
  double srtt = 0;  // the RFC's recurrence, in milliseconds
  // Within the nanoseconds the node's integer arithmetic truncates.
  auto near = [&w](double ms) { return std::abs(w.m->Find(1)->rtt.count() - ms * 1e6) <= 8; };
  for (std::size_t k = 0; k < std::size(delays_ms); ++k) {
    CAPTURE(k);
    CHECK(near(srtt));
    std::shared_ptr<const MembershipMessage> ping;
    Nanos sent{0};
    while (ping == nullptr) {  // 1 ms at a time to the next PING
      w.env.AdvanceTo(w.env.Now() + milliseconds(1));
      for (const auto& s : w.env.outbox()) {
        auto msg = std::dynamic_pointer_cast<const MembershipMessage>(s.msg);
        if (msg != nullptr && msg->header().type == MembershipType::kPing) {
          ping = msg;
          sent = s.at;
        }
      }
      w.env.outbox().clear();
    }
    w.env.AdvanceTo(sent + milliseconds(delays_ms[k]));
    w.Deliver(1, MembershipType::kAck, {}, ping->header().seq, 1);
    srtt = k == 0 ? delays_ms[k] : 7.0 / 8 * srtt + 1.0 / 8 * delays_ms[k];
  }
  CHECK(near(srtt));
  // An ACK relayed by another member (PING-REQ) is no direct round trip, nor is one for an old probe.
  w.Deliver(1, MembershipType::kAck, {}, 12345, 1);
  CHECK(near(srtt));
}

TEST_CASE("A suspected node refutes with a higher incarnation, and its local health rises") {
  Harness w(4);
  w.RunUntil(seconds(2));
  const int health_before = w.m->local_health();
  w.Deliver(2, MembershipType::kSync, {{MemberState::kSuspect, 0, 0, 2, ""}});
  CHECK(w.m->incarnation() == 1);
  CHECK(w.m->local_health() == health_before + 1);
  CHECK(w.m->stats().refutations == 1);
  // An old accusation changes nothing; a death notice at incarnation 5 is refuted with 6.
  w.Deliver(3, MembershipType::kSync, {{MemberState::kDead, 0, 0, 3, ""}});
  CHECK(w.m->incarnation() == 1);
  w.Deliver(3, MembershipType::kSync, {{MemberState::kDead, 0, 5, 3, ""}});
  CHECK(w.m->incarnation() == 6);
  // The refutation goes out on the next messages.
  w.sent.clear();
  w.RunUntil(w.env.Now() + seconds(2));
  bool refuted = false;
  for (const auto& [to, msg] : w.sent) {
    for (const auto& u : msg->updates()) {
      refuted |= u.member == 0 && u.state == MemberState::kAlive && u.incarnation == 6;
    }
  }
  CHECK(refuted);
}

TEST_CASE("A stale accusation is answered with the current incarnation on the reply, without a new one") {
  Harness w(4);
  w.RunUntil(seconds(2));
  w.Deliver(2, MembershipType::kSync, {{MemberState::kSuspect, 0, 0, 2, ""}});
  REQUIRE(w.m->incarnation() == 1);
  w.RunUntil(w.env.Now() + seconds(10));  // the refutation is spent
  w.env.outbox().clear();
  // Node 3 still holds incarnation 0 and suspects node 0 there (a merge did it).
  w.Deliver(3, MembershipType::kPing, {{MemberState::kSuspect, 0, 0, 3, ""}}, 77, 0);
  CHECK(w.m->incarnation() == 1);
  CHECK(w.m->stats().refutations == 1);
  CHECK(w.m->stats().stale_accusations == 1);
  REQUIRE(w.env.outbox().size() == 1);
  auto ack = std::dynamic_pointer_cast<const MembershipMessage>(w.env.outbox().front().msg);
  REQUIRE(ack != nullptr);
  CHECK(w.env.outbox().front().to == 3);
  CHECK(ack->header().type == MembershipType::kAck);
  REQUIRE_FALSE(ack->updates().empty());
  const MemberUpdate& first = ack->updates().front();
  CHECK(first.member == 0);
  CHECK(first.state == MemberState::kAlive);
  CHECK(first.incarnation == 1);
}

TEST_CASE("Members a state exchange newly suspects are pinged at once with their suspicion") {
  Harness w(6);
  w.RunUntil(seconds(1));
  w.env.outbox().clear();
  // Another side's view after a partition: members 2 and 3 dead, 4 alive.
  w.Deliver(1, MembershipType::kSync,
            {{MemberState::kDead, 2, 0, 1, ""},
             {MemberState::kDead, 3, 0, 1, ""},
             w.Said({MemberState::kAlive, 4, 0, 4, ""})});
  CHECK(w.StateOf(2) == MemberState::kSuspect);
  CHECK(w.StateOf(3) == MemberState::kSuspect);
  CHECK(w.m->stats().merge_checks == 2);
  std::set<NodeId> pinged;
  for (const auto& s : w.env.outbox()) {
    auto msg = std::dynamic_pointer_cast<const MembershipMessage>(s.msg);
    REQUIRE(msg != nullptr);
    if (msg->header().type != MembershipType::kPing) continue;
    pinged.insert(s.to);
    REQUIRE_FALSE(msg->updates().empty());
    CHECK(msg->updates().front().member == s.to);
    CHECK(msg->updates().front().state == MemberState::kSuspect);
  }
  CHECK(pinged == std::set<NodeId>{2, 3});
  // Their ACKs carry the refutations, which end the suspicions.
  w.Deliver(2, MembershipType::kAck, {w.Said({MemberState::kAlive, 2, 1, 2, ""})}, 999, 2);
  w.Deliver(3, MembershipType::kAck, {w.Said({MemberState::kAlive, 3, 1, 3, ""})}, 999, 3);
  CHECK(w.StateOf(2) == MemberState::kAlive);
  CHECK(w.StateOf(3) == MemberState::kAlive);
}

TEST_CASE("Suspects are pinged with their suspicion every period, at most indirect_probes of them, in turn") {
  // A merge suspects members 2-6 of eight; the merge check's PINGs are lost
  // (none of them answers). Each later period pings 3 suspects (indirect_probes)
  // besides its probe, going round them, so that each hears its suspicion again
  // within two periods, long before the suspicion's timeout (Min = 5 log10(8) s).
  Harness w(8);
  w.RunUntil(seconds(1));
  for (NodeId i = 2; i <= 6; ++i) w.answering.erase(i);
  std::vector<MemberUpdate> view;
  for (NodeId i = 2; i <= 6; ++i) view.push_back({MemberState::kDead, i, 0, 1, ""});
  w.Deliver(1, MembershipType::kSync, view);
  for (NodeId i = 2; i <= 6; ++i) REQUIRE(w.StateOf(i) == MemberState::kSuspect);
  w.env.outbox().clear();
  const Nanos start = w.env.Now();
  // Steps of 10 ms; PINGs go out at a period's start, all in one step.
  std::set<NodeId> pinged;
  int periods = 0;
  bool refuted = false;
  while (!refuted && w.env.Now() - start < seconds(4)) {
    w.env.AdvanceTo(w.env.Now() + milliseconds(10));
    auto out = std::move(w.env.outbox());
    w.env.outbox().clear();
    int to_suspects = 0;
    for (const auto& sent : out) {
      auto msg = std::dynamic_pointer_cast<const MembershipMessage>(sent.msg);
      REQUIRE(msg != nullptr);
      const MembershipHeader& h = msg->header();
      if (h.type == MembershipType::kPingReq) {  // a relay hears nothing from a silent suspect
        w.Deliver(sent.to, MembershipType::kNack, {}, h.seq, h.target);
        continue;
      }
      if (h.type != MembershipType::kPing) continue;
      if (sent.to < 2 || sent.to > 6) {  // the probe of an answering member
        w.Deliver(sent.to, MembershipType::kAck, {}, h.seq, sent.to);
        continue;
      }
      ++to_suspects;
      REQUIRE_FALSE(msg->updates().empty());
      CHECK(msg->updates().front().member == sent.to);
      CHECK(msg->updates().front().state == MemberState::kSuspect);
      pinged.insert(sent.to);
      // Once all five have been pinged, member 4 answers with its refutation.
      if (sent.to == 4 && periods >= 2) {
        w.Deliver(4, MembershipType::kAck, {w.Said({MemberState::kAlive, 4, 1, 4, ""})}, h.seq, 4);
        refuted = true;
      }
    }
    if (to_suspects > 0) ++periods;
    CHECK(to_suspects <= 4);  // 3 checks and the period's probe
  }
  MESSAGE(periods << " periods pinged suspects in "
                  << std::chrono::duration<double>(w.env.Now() - start).count() << " s");
  CHECK(pinged == std::set<NodeId>{2, 3, 4, 5, 6});
  CHECK(w.m->stats().suspect_checks >= 5);
  REQUIRE(refuted);
  CHECK(w.StateOf(4) == MemberState::kAlive);
  for (NodeId i : {2, 3, 5, 6}) CHECK(w.StateOf(i) == MemberState::kSuspect);  // not yet timed out
  CHECK(w.observer.dead.empty());
}

}  // namespace
}  // namespace murmur::membership
