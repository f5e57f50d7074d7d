// Membership: the protocol period (SWIM sections 3.1 and 4.3; Lifeguard's
// local health awareness).
//
// Timeline of one period that starts at t with multiplier M = LHM + 1:
//   t                      PING to the next member of the round-robin list
//   t + M * probe_timeout  no ACK yet: PING-REQ to k random alive members
//   t + M * probe_interval no ACK, direct or relayed: the member becomes suspect,
//                          and the next period starts.
// A relay pings the target itself, forwards its ACK, or sends a NACK when no
// ACK came within kNackFraction of its probe_timeout. LHM changes per
// period as memberlist implements Lifeguard: -1 after a direct ACK, 0 after
// an indirect one, + (expected - received) NACKs after a failure (+1 when no
// relay was asked).
#include "membership/membership.h"

#include <algorithm>
#include <cmath>

#include "core/log.h"

namespace murmur::membership {

namespace {
constexpr double kNackFraction = 0.8;
}  // namespace

void Membership::Tick() {
  tick_timer_ = 0;
  if (!running_) return;
  FinishProbe();
  Reap();
  StartProbe();
  CheckSuspects();
  tick_timer_ = After(health_.Scale(options_.probe_interval), [this] { Tick(); });
}

// A suspect's refutation comes back on the ACK of a ping that carries its
// suspicion (buddy system). The round-robin reaches a member once in up to
// 2n - 1 periods, and a state exchange pings each member it suspects once
// (OnMessage), so a single lost PING or ACK could leave a live member
// suspected until its suspicion times out (Min is 4.5 periods for 8 members).
// Each period therefore also pings up to `indirect_probes` suspects, going
// round them in id order. Their ACKs match no probe and change no local
// health; only the updates they carry count.
void Membership::CheckSuspects() {
  const auto limit = static_cast<std::size_t>(std::max(options_.indirect_probes, 0));
  std::vector<NodeId> due;
  auto visit = [&](auto begin, auto end) {
    for (auto it = begin; it != end && due.size() < limit; ++it) {
      if (it->second.member.state == MemberState::kSuspect && !(probe_ && probe_->target == it->first))
        due.push_back(it->first);
    }
  };
  const auto from = members_.lower_bound(suspect_cursor_);
  visit(from, members_.end());
  visit(members_.begin(), from);
  for (NodeId member : due) {
    ++stats_.suspect_checks;
    Send(MembershipType::kPing, member, ++seq_, member);
  }
  if (!due.empty()) suspect_cursor_ = due.back() + 1;
}

NodeId Membership::NextProbeTarget() {
  // SWIM 4.3: round-robin over a random permutation, reshuffled after each
  // traversal, so every member is probed within 2n - 1 periods (worst case).
  for (int pass = 0; pass < 2; ++pass) {
    while (probe_pos_ < probe_order_.size()) {
      const NodeId id = probe_order_[probe_pos_++];
      auto it = members_.find(id);
      if (it != members_.end() && (it->second.member.state == MemberState::kAlive ||
                                   it->second.member.state == MemberState::kSuspect)) {
        return id;
      }
    }
    probe_order_.clear();
    for (const auto& [id, e] : members_) {
      if (e.member.state == MemberState::kAlive || e.member.state == MemberState::kSuspect) {
        probe_order_.push_back(id);
      }
    }
    rng_.Shuffle(std::span<NodeId>(probe_order_));
    probe_pos_ = 0;
  }
  return kNoNode;
}

void Membership::StartProbe() {
  const NodeId target = NextProbeTarget();
  if (target == kNoNode) return;
  probe_ = Probe{++seq_, target, env_.Now()};
  ++stats_.probes;
  Send(MembershipType::kPing, target, probe_->seq, target);
  probe_timer_ = After(health_.Scale(options_.probe_timeout), [this] { OnProbeTimeout(); });
}

void Membership::OnProbeTimeout() {
  probe_timer_ = 0;
  if (!probe_ || probe_->acked) return;
  std::vector<NodeId> relays;
  for (const auto& [id, e] : members_) {
    if (id != probe_->target && e.member.state == MemberState::kAlive) relays.push_back(id);
  }
  const std::size_t k =
      std::min<std::size_t>(relays.size(), static_cast<std::size_t>(options_.indirect_probes));
  // Partial Fisher-Yates: k distinct relays, uniformly.
  for (std::size_t i = 0; i < k; ++i) {
    std::swap(relays[i], relays[i + rng_.UniformInt(relays.size() - i)]);
    Send(MembershipType::kPingReq, relays[i], probe_->seq, probe_->target);
    ++stats_.ping_reqs_sent;
  }
  probe_->expected_nacks = static_cast<int>(k);
}

void Membership::FinishProbe() {
  if (!probe_) return;
  const Probe p = *probe_;
  probe_.reset();
  Cancel(probe_timer_);
  if (p.acked) {
    if (p.direct) health_.Apply(-1);
    return;
  }
  ++stats_.probes_failed;
  health_.Apply(p.expected_nacks > 0 ? p.expected_nacks - std::min(p.nacks, p.expected_nacks) : 1);
  auto it = members_.find(p.target);
  if (it == members_.end()) return;
  const Member& m = it->second.member;
  if (m.state != MemberState::kAlive && m.state != MemberState::kSuspect) return;
  if (m.state == MemberState::kAlive) ++stats_.suspicions_raised;
  ApplyUpdate(MemberUpdate{MemberState::kSuspect, p.target, m.incarnation, self(), m.address}, self());
}

void Membership::HandlePing(const MembershipHeader& h) {
  if (h.target != self()) {
    ++stats_.rejected_header;
    return;
  }
  Send(MembershipType::kAck, h.sender, h.seq, self());
}

void Membership::HandlePingReq(const MembershipHeader& h) {
  if (h.target == self() || h.target == h.sender || h.target == kNoNode) {
    ++stats_.rejected_header;
    return;
  }
  const std::uint32_t seq = ++seq_;
  Relay relay{h.sender, h.seq, h.target, 0};
  relay.timer = After(
      Nanos(static_cast<Nanos::rep>(kNackFraction * double(options_.probe_timeout.count()))), [this, seq] {
        auto it = relays_.find(seq);
        if (it == relays_.end()) return;
        it->second.timer = 0;
        Send(MembershipType::kNack, it->second.requester, it->second.requester_seq, it->second.target);
        // A late ACK is still forwarded until the requester's period is surely over.
        it->second.timer = After(options_.probe_interval, [this, seq] { relays_.erase(seq); });
      });
  relays_.emplace(seq, relay);
  Send(MembershipType::kPing, h.target, seq, h.target);
}

void Membership::HandleAck(NodeId from, const MembershipHeader& h) {
  if (probe_ && h.seq == probe_->seq && h.target == probe_->target) {
    if (!probe_->acked) {
      probe_->acked = true;
      probe_->direct = from == probe_->target;
      Cancel(probe_timer_);
      auto member = members_.find(probe_->target);
      if (probe_->direct && member != members_.end()) {
        const Nanos sample = env_.Now() - probe_->sent;
        Nanos& srtt = member->second.member.rtt;
        srtt = srtt == Nanos(0) ? sample : (7 * srtt + sample) / 8;
      }
    }
    return;
  }
  auto it = relays_.find(h.seq);
  if (it == relays_.end() || it->second.target != from || h.target != from) return;
  Relay relay = it->second;
  relays_.erase(it);
  Cancel(relay.timer);
  Send(MembershipType::kAck, relay.requester, relay.requester_seq, relay.target);
}

void Membership::HandleNack(const MembershipHeader& h) {
  if (probe_ && h.seq == probe_->seq && h.target == probe_->target) {
    ++probe_->nacks;
    ++stats_.nacks_received;
  }
}

}  // namespace murmur::membership
