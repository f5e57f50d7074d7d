// A Membership on a ManualEnv, facing members played by the test: node 0
// runs Membership, nodes 1..n-1 are scripted (membership_test.cc and
// suspicion_test.cc).
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/manual_env.h"
#include "membership/membership.h"
#include "membership/signer.h"

namespace murmur::membership::testing {

inline crypto::Identity KeyOf(NodeId node) {
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
      env.AdvanceTo(std::min(t, env.Now() + std::chrono::milliseconds(10)));
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

}  // namespace murmur::membership::testing
