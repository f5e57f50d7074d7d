// One Membership on a ManualEnv, facing members played by the test
// (tests/membership/harness.h): signatures, statements, the buddy system,
// leave and peer sampling. Suspicion and refutation: suspicion_test.cc.
#include "membership/membership.h"

#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <set>

#include "core/manual_env.h"
#include "membership/peer_sampler.h"
#include "membership/signer.h"
#include "tests/membership/harness.h"

namespace murmur::membership {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::Harness;
using testing::KeyOf;

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
