// Membership: the member table and the order of updates (SWIM section 4.2).
//
// About another member m with local state (s, i), an update (s', i') wins when
//   alive   i' >  i                        (a refutation or a rejoin)
//   suspect i' >= i and s is alive, or i' > i and s is suspect
//           (same i' while suspect: one more independent confirmation)
//   dead    i' >= i and s is alive or suspect
//   left    i' >= i, s is not left, and the update comes from m itself
// Dead and left are final for an incarnation: only a higher incarnation
// (m refuting, or rejoining) brings m back. About this node, any suspect,
// dead or left update at an incarnation >= ours, or an alive one above ours,
// is refuted by taking that incarnation + 1 (Lifeguard counts it against the
// local health).
//
// An alive or left update takes effect only as m's own signed statement
// (Verified), and an unknown member enters only on one: suspicions and
// deaths of members never seen are of no use, and would let a third party
// fill the view.
#include "membership/membership.h"

#include <algorithm>
#include <cmath>

#include "core/log.h"

namespace murmur::membership {

void Membership::Sign(MemberUpdate& u) const {
  u.statement = signer_.Sign(StatementBytes(u));
  u.credential = signer_.Credential();
}

MemberUpdate Membership::SelfUpdate() const {
  const MemberState state = left_ ? MemberState::kLeft : MemberState::kAlive;
  // Signed once per incarnation (and again when the credential is renewed).
  if (!self_update_ || self_update_->state != state || self_update_->incarnation != incarnation_ ||
      self_update_->credential != signer_.Credential()) {
    MemberUpdate u{state, self(), incarnation_, self(), options_.address};
    Sign(u);
    self_update_ = std::move(u);
  }
  return *self_update_;
}

MemberUpdate Membership::UpdateOf(const Entry& e) const {
  MemberUpdate u{e.member.state, e.member.id, e.member.incarnation, e.origin, e.member.address};
  if (u.IsStatement()) {
    u.statement = e.statement;
    u.credential = e.credential;
  }
  return u;
}

bool Membership::Verified(const MemberUpdate& u, NodeId from, crypto::SignPublicKey* key) {
  const StatementVerdict v = verifier_.VerifyStatement(u);
  switch (v.check) {
    case StatementCheck::kValid: *key = v.key; return true;
    case StatementCheck::kUnknownKey: ++stats_.unverified_statements; return false;
    case StatementCheck::kForged:
      ++stats_.forged_statements;
      MURMUR_LOG(kWarning) << "node " << self() << ": " << MemberStateName(u.state) << " statement of member "
                           << u.member << " relayed by node " << from << " is forged; dropped";
      if (observer_ != nullptr && from != self()) observer_->OnRejected(from, Rejection::kForgedStatement);
      return false;
  }
  return false;
}

std::size_t Membership::GroupSize() const {
  std::size_t n = 1;
  for (const auto& [id, e] : members_) {
    n += e.member.state == MemberState::kAlive || e.member.state == MemberState::kSuspect;
  }
  return n;
}

int Membership::RetransmitLimit() const {
  const double n = static_cast<double>(GroupSize());
  return options_.retransmit_mult * static_cast<int>(std::ceil(std::log10(n + 1)));
}

void Membership::Refute(const MemberUpdate& u) {
  if (left_) return;
  const bool accusation = u.state != MemberState::kAlive;
  if (accusation && u.incarnation < incarnation_) {
    // A stale accusation: its sender holds an older incarnation of this node
    // (after a partition, a merge turns the other side's "dead" into a
    // suspicion at the incarnation that side last saw). Others already hold
    // the current one and ignore the suspicion, so it would time out into a
    // death there. The current incarnation goes out again, first on the reply
    // to this very message; no new incarnation is needed.
    ++stats_.stale_accusations;
    broadcasts_.Enqueue(SelfUpdate());
    return;
  }
  if (accusation ? u.incarnation < incarnation_ : u.incarnation <= incarnation_) return;
  incarnation_ = u.incarnation + 1;
  ++stats_.refutations;
  if (accusation) health_.Apply(1);
  broadcasts_.Enqueue(SelfUpdate());
}

void Membership::ApplyUpdate(const MemberUpdate& u, NodeId from) {
  if (u.member == kNoNode) return;
  if (u.member == self()) {
    Refute(u);
    return;
  }
  crypto::SignPublicKey key{};
  auto it = members_.find(u.member);
  if (it == members_.end()) {
    // Unknown members enter on their own alive statement only, and a peer
    // brings in at most max_members_per_peer.
    if (u.state != MemberState::kAlive) return;
    if (introduced_[from] >= options_.max_members_per_peer) {
      ++stats_.members_refused;
      return;
    }
    if (!Verified(u, from, &key)) return;
    ++introduced_[from];
    it = members_.emplace(u.member, Entry{}).first;
    Entry& e = it->second;
    e.member.id = u.member;
    e.member.address = u.address;
    e.member.key = key;
    e.statement = u.statement;
    e.credential = u.credential;
    e.introduced_by = from;
    e.member.state = MemberState::kDead;  // so that SetState reports the change
    // SWIM 4.3: a new member goes to a random place in the rest of this traversal.
    const std::size_t rest = probe_order_.size() - probe_pos_;
    probe_order_.insert(
        probe_order_.begin() + static_cast<std::ptrdiff_t>(probe_pos_ + rng_.UniformInt(rest + 1)), u.member);
    SetState(e, u.state, u.incarnation, u.origin);
    broadcasts_.Enqueue(UpdateOf(e));
    return;
  }
  Entry& e = it->second;
  const MemberState s = e.member.state;
  const std::uint64_t i = e.member.incarnation;
  switch (u.state) {
    case MemberState::kAlive:
      if (u.incarnation <= i || !Verified(u, from, &key)) return;
      e.member.key = key;
      e.statement = u.statement;
      e.credential = u.credential;
      if (s != MemberState::kAlive && s != MemberState::kSuspect) {
        probe_order_.insert(
            probe_order_.begin() + static_cast<std::ptrdiff_t>(
                                       probe_pos_ + rng_.UniformInt(probe_order_.size() - probe_pos_ + 1)),
            u.member);
      }
      {
        const bool moved = e.member.address != u.address;
        e.member.address = u.address;
        SetState(e, MemberState::kAlive, u.incarnation, u.origin, moved);
      }
      break;
    case MemberState::kSuspect:
      if (s == MemberState::kSuspect && u.incarnation == i) {
        // Lifeguard (dynamic suspicion timeouts): an independent confirmation shortens the timeout;
        // pass it on so that others count it too.
        if (e.suspicion && e.suspicion->Confirm(u.origin)) {
          ScheduleSuspicionTimer(e);
          broadcasts_.Enqueue(u);
        }
        return;
      }
      if (!(s == MemberState::kAlive && u.incarnation >= i) &&
          !(s == MemberState::kSuspect && u.incarnation > i)) {
        return;
      }
      SetState(e, MemberState::kSuspect, u.incarnation, u.origin);
      break;
    case MemberState::kDead:
      if ((s != MemberState::kAlive && s != MemberState::kSuspect) || u.incarnation < i) return;
      SetState(e, MemberState::kDead, u.incarnation, u.origin);
      break;
    case MemberState::kLeft:
      if (s == MemberState::kLeft || u.incarnation < i || u.origin != u.member || !Verified(u, from, &key))
        return;
      e.statement = u.statement;
      e.credential = u.credential;
      SetState(e, MemberState::kLeft, u.incarnation, u.origin);
      break;
  }
  broadcasts_.Enqueue(UpdateOf(e));
}

void Membership::SetState(Entry& e, MemberState state, std::uint64_t incarnation, NodeId origin,
                          bool address_changed) {
  const bool changed = e.member.state != state;
  e.member.state = state;
  e.member.incarnation = incarnation;
  e.origin = origin;
  if (changed) e.member.since = env_.Now();
  if (state != MemberState::kSuspect) {
    e.suspicion.reset();
    Cancel(e.suspicion_timer);
  } else {
    StartSuspicion(e, origin);
  }
  if (observer_ == nullptr) return;
  switch (state) {
    case MemberState::kAlive:
      if (changed || address_changed) observer_->OnMemberAlive(e.member);
      break;
    case MemberState::kSuspect:
      if (changed) observer_->OnMemberSuspect(e.member);
      break;
    case MemberState::kDead:
    case MemberState::kLeft:
      if (changed) observer_->OnMemberDead(e.member);
      break;
  }
}

void Membership::StartSuspicion(Entry& e, NodeId origin) {
  // Lifeguard's dynamic suspicion timeout. K is lowered to 0 (the timeout is Min) when the group is
  // too small to give K confirmations: neither this node nor the suspect confirms.
  const std::size_t n = GroupSize();
  const Nanos min = SuspicionMinTimeout(options_.suspicion_alpha, n, options_.probe_interval);
  const Nanos max = options_.dynamic_suspicion
                        ? Nanos(static_cast<Nanos::rep>(options_.suspicion_beta * double(min.count())))
                        : min;
  const int k = n < static_cast<std::size_t>(options_.suspicion_k) + 2 ? 0 : options_.suspicion_k;
  e.suspicion = std::make_unique<Suspicion>(env_.Now(), min, max, options_.dynamic_suspicion ? k : 0, origin);
  ScheduleSuspicionTimer(e);
}

void Membership::ScheduleSuspicionTimer(Entry& e) {
  Cancel(e.suspicion_timer);
  if (!running_) return;
  const Nanos delay = std::max(Nanos(0), e.suspicion->deadline() - env_.Now());
  const NodeId id = e.member.id;
  e.suspicion_timer = After(delay, [this, id] { OnSuspicionTimeout(id); });
}

void Membership::OnSuspicionTimeout(NodeId id) {
  auto it = members_.find(id);
  if (it == members_.end() || it->second.member.state != MemberState::kSuspect) return;
  it->second.suspicion_timer = 0;
  ++stats_.deaths_declared;
  ApplyUpdate(
      MemberUpdate{MemberState::kDead, id, it->second.member.incarnation, self(), it->second.member.address},
      self());
}

void Membership::Reap() {
  const Nanos now = env_.Now();
  for (auto it = members_.begin(); it != members_.end();) {
    const Member& m = it->second.member;
    const bool gone = m.state == MemberState::kDead || m.state == MemberState::kLeft;
    if (gone && now - m.since >= options_.reap_after) {
      broadcasts_.Forget(m.id);
      auto by = introduced_.find(it->second.introduced_by);
      if (by != introduced_.end() && --by->second == 0) introduced_.erase(by);
      it = members_.erase(it);
    } else {
      ++it;
    }
  }
}

std::vector<Member> Membership::Members() const {
  std::vector<Member> out;
  out.reserve(members_.size());
  for (const auto& [id, e] : members_) out.push_back(e.member);
  return out;
}

std::vector<NodeId> Membership::AliveMembers() const {
  std::vector<NodeId> out;
  for (const auto& [id, e] : members_) {
    if (e.member.state == MemberState::kAlive) out.push_back(id);
  }
  return out;
}

std::optional<Member> Membership::Find(NodeId id) const {
  auto it = members_.find(id);
  if (it == members_.end()) return std::nullopt;
  return it->second.member;
}

MembershipCounts Membership::counts() const {
  MembershipCounts c;
  for (const auto& [id, e] : members_) {
    switch (e.member.state) {
      case MemberState::kAlive: ++c.alive; break;
      case MemberState::kSuspect: ++c.suspect; break;
      case MemberState::kDead:
      case MemberState::kLeft: ++c.dead; break;
    }
  }
  return c;
}

}  // namespace murmur::membership
