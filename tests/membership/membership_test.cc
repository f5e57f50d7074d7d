// One Membership on a ManualEnv, facing members played by the test: closed-form
// timing of Lifeguard's suspicion, refutation, signatures, the buddy system,
// leave and peer sampling.
#include "membership/membership.h"

#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <set>

#include "core/manual_env.h"
#include "membership/peer_sampler.h"
#include "membership/signer.h"

namespace murmur::membership {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

crypto::Identity KeyOf(NodeId node) {
  std::array<std::uint8_t, crypto::kSignSeedSize> seed{};
  seed[0] = static_cast<std::uint8_t>(node);
  seed[1] = 0xA5;
  return crypto::Identity::FromSeed(seed);
}

struct Counter final : MembershipObserver {
  void OnMemberAlive(const Member& m) override { ++alive[m.id]; }
  void OnMemberSuspect(const Member& m) override { ++suspect[m.id]; }
  void OnMemberDead(const Member& m) override { dead[m.id] = m.state; }
  void OnRejected(NodeId from, Rejection why) override { rejected.push_back({from, why}); }
  std::map<NodeId, int> alive, suspect;
  std::map<NodeId, MemberState> dead;
  std::vector<std::pair<NodeId, Rejection>> rejected;
};

// Node 0 runs Membership; nodes 1..n-1 are played by the test, which answers
// the PINGs (and PING-REQs) addressed to the members in `answering`.
struct Harness {
  explicit Harness(NodeId n, MembershipOptions options = {}, std::uint64_t seed = 1) : env(0, seed) {
    for (NodeId i = 0; i < n; ++i) {
      keys.Add(i, KeyOf(i).public_key());
      signers.push_back(std::make_unique<Ed25519Signer>(KeyOf(i)));
    }
    m = Membership::Create(env, options, *signers[0], keys, &observer).value();
    m->Start();
    std::vector<MemberUpdate> everyone;
    for (NodeId i = 1; i < n; ++i) {
      everyone.push_back(Said({MemberState::kAlive, i, 0, i, "10.0.0." + std::to_string(i) + ":7000"}));
      answering.insert(i);
    }
    Deliver(1, MembershipType::kSync, everyone);
  }

  // `u` (alive or left) as the statement of its member, signed with its key.
  MemberUpdate Said(MemberUpdate u) const {
    u.statement = signers.at(u.member)->Sign(StatementBytes(u));
    return u;
  }

  void Deliver(NodeId from, MembershipType type, std::vector<MemberUpdate> updates, std::uint32_t seq = 0,
               NodeId target = kNoNode) {
    m->OnMessage(from,
                 MembershipMessage::Make({type, from, 0, seq, target}, std::move(updates), *signers[from]));
  }

  // Advances to `t` in 10 ms steps, answering probes after each step.
  void RunUntil(Nanos t) {
    while (env.Now() < t) {
      env.AdvanceTo(std::min(t, env.Now() + milliseconds(10)));
      auto out = std::move(env.outbox());
      env.outbox().clear();
      for (const auto& s : out) {
        auto msg = std::dynamic_pointer_cast<const MembershipMessage>(s.msg);
        REQUIRE(msg != nullptr);
        sent.push_back({s.to, msg});
        const MembershipHeader& h = msg->header();
        if (answering.count(s.to) == 0) continue;
        if (h.type == MembershipType::kPing) Deliver(s.to, MembershipType::kAck, {}, h.seq, s.to);
        if (h.type == MembershipType::kPingReq && answering.count(h.target) != 0) {
          Deliver(s.to, MembershipType::kAck, {}, h.seq, h.target);
        }
      }
    }
  }

  MemberState StateOf(NodeId id) const { return m->Find(id).value().state; }

  ManualEnv env;
  KeyDirectory keys;
  std::vector<std::unique_ptr<Ed25519Signer>> signers;
  Counter observer;
  std::unique_ptr<Membership> m;
  std::set<NodeId> answering;
  std::vector<std::pair<NodeId, std::shared_ptr<const MembershipMessage>>> sent;
};

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

TEST_CASE("Forged, unsigned and misaddressed membership messages are dropped and counted") {
  Harness w(4);
  const auto& st = w.m->stats();
  const std::uint64_t accepted = st.messages_received;
  const MemberUpdate accuse{MemberState::kSuspect, 1, 0, 2, ""};
  // Node 3's key signing a message that claims to come from node 2.
  w.m->OnMessage(2,
                 MembershipMessage::Make({MembershipType::kSync, 2, 0, 0, kNoNode}, {accuse}, *w.signers[3]));
  // No signature at all.
  w.m->OnMessage(
      2, std::make_shared<MembershipMessage>(MembershipHeader{MembershipType::kSync, 2, 0, 0, kNoNode},
                                             std::vector<MemberUpdate>{accuse}, crypto::Signature{}));
  CHECK(st.rejected_signature == 2);
  // Honestly signed by 2, but delivered as if from 3; or addressed to node 9.
  w.m->OnMessage(3,
                 MembershipMessage::Make({MembershipType::kSync, 2, 0, 0, kNoNode}, {accuse}, *w.signers[2]));
  w.m->OnMessage(2,
                 MembershipMessage::Make({MembershipType::kSync, 2, 9, 0, kNoNode}, {accuse}, *w.signers[2]));
  CHECK(st.rejected_header == 2);
  CHECK(st.messages_received == accepted);
  CHECK(w.StateOf(1) == MemberState::kAlive);
  // The same update, honestly sent, is accepted.
  w.Deliver(2, MembershipType::kSync, {accuse});
  CHECK(st.messages_received == accepted + 1);
  CHECK(w.StateOf(1) == MemberState::kSuspect);
}

TEST_CASE("A member enters the view, moves or comes back only on its own signed statement") {
  Harness w(4);
  const auto& st = w.m->stats();
  // Node 1 relays an alive update for node 3 that node 3 did not sign (here:
  // signed by node 1), pointing it at another address: dropped and reported.
  MemberUpdate moved{MemberState::kAlive, 3, 5, 3, "10.9.9.9:1"};
  moved.statement = w.signers[1]->Sign(StatementBytes(moved));
  w.Deliver(1, MembershipType::kSync, {moved});
  CHECK(w.m->Find(3)->address == "10.0.0.3:7000");
  CHECK(w.m->Find(3)->incarnation == 0);
  CHECK(st.forged_statements == 1);
  REQUIRE(w.observer.rejected.size() == 1);
  CHECK(w.observer.rejected[0] == std::pair<NodeId, Rejection>{1, Rejection::kForgedStatement});
  // Node 3's own statement, relayed by node 1, moves it.
  w.Deliver(1, MembershipType::kSync, {w.Said(MemberUpdate{MemberState::kAlive, 3, 5, 3, "10.9.9.9:1"})});
  CHECK(w.m->Find(3)->address == "10.9.9.9:1");
  CHECK(w.m->Find(3)->key == KeyOf(3).public_key());
  // A member nobody knows a key of (the verifier's directory lacks it) does
  // not enter, nor does any member on a suspicion alone.
  w.signers.push_back(std::make_unique<Ed25519Signer>(KeyOf(4)));
  w.Deliver(1, MembershipType::kSync, {w.Said({MemberState::kAlive, 4, 0, 4, "10.0.0.4:7000"})});
  w.Deliver(1, MembershipType::kSync, {{MemberState::kSuspect, 5, 0, 1, "10.0.0.5:7000"}});
  CHECK_FALSE(w.m->Find(4).has_value());
  CHECK_FALSE(w.m->Find(5).has_value());
  CHECK(st.unverified_statements == 1);
  CHECK(w.observer.rejected.size() == 1);  // not knowing a key is no offence of the relay
}

TEST_CASE("One peer brings at most max_members_per_peer members into the view") {
  MembershipOptions o;
  o.max_members_per_peer = 3;
  Harness w(2, o);  // node 1 is in the view, on its own statement
  for (NodeId i = 2; i < 8; ++i) {
    w.keys.Add(i, KeyOf(i).public_key());
    w.signers.push_back(std::make_unique<Ed25519Signer>(KeyOf(i)));
  }
  std::vector<MemberUpdate> six;
  for (NodeId i = 2; i < 8; ++i) six.push_back(w.Said({MemberState::kAlive, i, 0, i, ""}));
  w.Deliver(1, MembershipType::kSync, six);
  CHECK(w.m->counts().alive == 3);  // node 1 itself, and two of the six
  CHECK(w.m->stats().members_refused == 4);
  // Another peer may still bring the rest.
  w.Deliver(6, MembershipType::kSync, six);
  CHECK(w.m->counts().alive == 6);
}

TEST_CASE("A ping to a suspect member carries its suspicion first (buddy system)") {
  Harness w(6);
  w.RunUntil(seconds(1));
  w.Deliver(2, MembershipType::kSync, {{MemberState::kSuspect, 1, 0, 2, ""}});
  w.sent.clear();
  // Within one traversal of the probe list (at most 2n - 1 periods) node 1 is probed.
  w.RunUntil(w.env.Now() + seconds(11));
  int pings = 0;
  for (const auto& [to, msg] : w.sent) {
    if (to != 1 || msg->header().type != MembershipType::kPing) continue;
    ++pings;
    REQUIRE_FALSE(msg->updates().empty());
    const MemberUpdate& first = msg->updates().front();
    CHECK(first.member == 1);
    CHECK(first.state == MemberState::kSuspect);
  }
  CHECK(pings >= 1);
}

TEST_CASE("Leave tells every member, then the node stops") {
  Harness w(5);
  w.RunUntil(seconds(2));
  w.sent.clear();
  w.m->Leave();
  w.RunUntil(w.env.Now() + milliseconds(10));
  std::set<NodeId> told;
  for (const auto& [to, msg] : w.sent) {
    for (const auto& u : msg->updates()) {
      if (u.member == 0 && u.state == MemberState::kLeft) told.insert(to);
    }
  }
  CHECK(told == std::set<NodeId>{1, 2, 3, 4});
  CHECK_FALSE(w.m->running());
  CHECK(w.env.pending_timers() == 0);
  w.sent.clear();
  w.RunUntil(w.env.Now() + seconds(5));
  CHECK(w.sent.empty());
}

TEST_CASE("A left member is reported as left, not failed, and reaped after reap_after") {
  MembershipOptions o;
  o.reap_after = seconds(20);
  Harness w(4, o);
  w.RunUntil(seconds(1));
  w.answering.erase(3);
  w.Deliver(3, MembershipType::kSync, {w.Said({MemberState::kLeft, 3, 0, 3, ""})});
  CHECK(w.observer.dead.at(3) == MemberState::kLeft);
  CHECK(w.m->counts().dead == 1);
  // Someone else cannot make a member leave: not under its own name, nor
  // under the member's without the member's signature.
  w.Deliver(1, MembershipType::kSync, {{MemberState::kLeft, 2, 0, 1, ""}});
  CHECK(w.StateOf(2) == MemberState::kAlive);
  MemberUpdate forged = w.Said({MemberState::kLeft, 1, 0, 1, ""});  // node 1's statement ...
  forged.member = forged.origin = 2;                                // ... claimed for node 2
  w.Deliver(1, MembershipType::kSync, {forged});
  CHECK(w.StateOf(2) == MemberState::kAlive);
  CHECK(w.m->stats().forged_statements == 1);
  w.RunUntil(seconds(19));
  CHECK(w.m->Find(3).has_value());
  w.RunUntil(seconds(24));
  CHECK_FALSE(w.m->Find(3).has_value());
  CHECK(w.m->counts().alive == 2);
}

TEST_CASE("Options out of range are refused by name") {
  ManualEnv env;
  KeyDirectory keys;
  Ed25519Signer signer(KeyOf(0));
  MembershipOptions o;
  o.probe_timeout = o.probe_interval;
  CHECK(Membership::Create(env, o, signer, keys).status().message().find("probe_timeout") !=
        std::string::npos);
  o = {};
  o.max_piggyback = 0;
  CHECK(Membership::Create(env, o, signer, keys).status().message().find("max_piggyback") !=
        std::string::npos);
  o = {};
  o.address = std::string(129, 'x');
  CHECK(Membership::Create(env, o, signer, keys).status().code() == StatusCode::kInvalidArgument);
}

TEST_CASE("Peer sampling draws k distinct alive members, every k-subset equally often") {
  Harness w(11);  // 10 alive members besides node 0
  w.Deliver(2, MembershipType::kSync, {{MemberState::kSuspect, 10, 0, 2, ""}});  // 9 alive remain
  MembershipPeerSampler sampler(w.env, *w.m);
  std::map<std::vector<NodeId>, int> subsets;
  const int draws = 42000;  // C(9, 3) = 84 subsets, 500 expected each
  for (int d = 0; d < draws; ++d) {
    std::vector<NodeId> s = sampler.Sample(3);
    REQUIRE(s.size() == 3);
    std::sort(s.begin(), s.end());
    CHECK(std::adjacent_find(s.begin(), s.end()) == s.end());
    CHECK(s.front() >= 1);
    CHECK(s.back() <= 9);
    ++subsets[s];
  }
  CHECK(subsets.size() == 84);
  double chi2 = 0;
  for (const auto& [s, n] : subsets) chi2 += (n - 500.0) * (n - 500.0) / 500.0;
  // Chi-square with 83 degrees of freedom: 0.999 quantile 128.6.
  CHECK(chi2 < 128.6);
  CHECK(sampler.Sample(50).size() == 9);

  // Deterministic from the Env's stream: the same seed draws the same peers.
  Harness again(11);
  again.Deliver(2, MembershipType::kSync, {{MemberState::kSuspect, 10, 0, 2, ""}});
  MembershipPeerSampler s1(w.env, *w.m), s2(again.env, *again.m);
  for (int d = 0; d < 10; ++d) CHECK(s1.Sample(4) == s2.Sample(4));
}

}  // namespace
}  // namespace murmur::membership
