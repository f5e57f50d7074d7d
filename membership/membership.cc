// Membership: creation, lifecycle, message intake and output, and timers.
// The member table is in membership_view.cc, the protocol period in
// membership_probe.cc.
#include "membership/membership.h"

#include <algorithm>
#include <cmath>

#include "core/log.h"

namespace murmur::membership {

namespace {
Status Positive(Nanos v, const char* name) {
  if (v <= Nanos(0))
    return Status::InvalidArgument(std::string("membership option ") + name + " must be > 0");
  return Status::Ok();
}
}  // namespace

Result<std::unique_ptr<Membership>> Membership::Create(Env& env, MembershipOptions options,
                                                       const MembershipSigner& signer,
                                                       const MembershipVerifier& verifier,
                                                       MembershipObserver* observer) {
  MURMUR_RETURN_IF_ERROR(Positive(options.probe_interval, "probe_interval"));
  MURMUR_RETURN_IF_ERROR(Positive(options.probe_timeout, "probe_timeout"));
  MURMUR_RETURN_IF_ERROR(Positive(options.join_retry, "join_retry"));
  MURMUR_RETURN_IF_ERROR(Positive(options.reap_after, "reap_after"));
  if (options.probe_timeout >= options.probe_interval) {
    return Status::InvalidArgument("membership option probe_timeout must be shorter than probe_interval");
  }
  if (options.address.size() > 128) {
    return Status::InvalidArgument("membership address of " + std::to_string(options.address.size()) +
                                   " bytes is over the limit of 128");
  }
  if (options.indirect_probes < 0 || options.indirect_probes > 16) {
    return Status::InvalidArgument("membership option indirect_probes must be in [0, 16]");
  }
  if (options.retransmit_mult < 1)
    return Status::InvalidArgument("membership option retransmit_mult must be >= 1");
  const std::size_t max_updates = MembershipDecodeLimits{}.max_updates;
  if (options.max_piggyback < 1 || options.max_piggyback > max_updates) {
    return Status::InvalidArgument("membership option max_piggyback must be in [1, " +
                                   std::to_string(max_updates) + "]");
  }
  if (options.sync_chunk < 1 || options.sync_chunk > max_updates) {
    return Status::InvalidArgument("membership option sync_chunk must be in [1, " +
                                   std::to_string(max_updates) + "]");
  }
  if (options.max_members_per_peer < 1)
    return Status::InvalidArgument("membership option max_members_per_peer must be >= 1");
  if (!(options.suspicion_alpha > 0) || !(options.suspicion_beta >= 1)) {
    return Status::InvalidArgument("membership options need suspicion_alpha > 0 and suspicion_beta >= 1");
  }
  if (options.suspicion_k < 0) return Status::InvalidArgument("membership option suspicion_k must be >= 0");
  if (options.max_local_health < 1) {
    return Status::InvalidArgument("membership option max_local_health must be >= 1");
  }
  if (options.sync_interval < Nanos(0) || options.reconnect_interval < Nanos(0)) {
    return Status::InvalidArgument("membership options sync_interval and reconnect_interval must be >= 0");
  }
  return std::unique_ptr<Membership>(new Membership(env, std::move(options), signer, verifier, observer));
}

Membership::Membership(Env& env, MembershipOptions options, const MembershipSigner& signer,
                       const MembershipVerifier& verifier, MembershipObserver* observer)
    : env_(env),
      options_(std::move(options)),
      signer_(signer),
      verifier_(verifier),
      observer_(observer),
      rng_(env.MakeRng(RngPurpose::kMembership)),
      health_(options_.max_local_health) {}

Membership::~Membership() { Stop(); }

void Membership::Start() {
  if (running_ || left_) return;
  running_ = true;
  broadcasts_.Enqueue(SelfUpdate());
  SendJoins();
  // A random phase keeps nodes started together from probing in lockstep.
  const auto phase = Nanos(static_cast<Nanos::rep>(rng_.Uniform() * double(options_.probe_interval.count())));
  tick_timer_ = After(phase, [this] { Tick(); });
  if (options_.sync_interval > Nanos(0)) {
    sync_timer_ = After(options_.sync_interval, [this] { PushPull(false); });
  }
  if (options_.reconnect_interval > Nanos(0)) {
    reconnect_timer_ = After(options_.reconnect_interval, [this] { PushPull(true); });
  }
}

void Membership::Stop() {
  running_ = false;
  for (TimerId id : timers_) env_.CancelTimer(id);
  timers_.clear();
  tick_timer_ = probe_timer_ = join_timer_ = sync_timer_ = reconnect_timer_ = 0;
  for (auto& [id, e] : members_) e.suspicion_timer = 0;
  for (auto& [seq, r] : relays_) r.timer = 0;
  probe_.reset();
  relays_.clear();
}

Status Membership::SetAddress(std::string address) {
  if (address.size() > 128)
    return Status::InvalidArgument("membership address of " + std::to_string(address.size()) +
                                   " bytes is over the limit of 128");
  if (address == options_.address || left_) return Status::Ok();
  options_.address = std::move(address);
  ++incarnation_;
  broadcasts_.Enqueue(SelfUpdate());
  return Status::Ok();
}

void Membership::Leave() {
  if (!running_ || left_) return;
  left_ = true;
  const MemberUpdate left = SelfUpdate();
  for (const auto& [id, e] : members_) {
    if (e.member.state == MemberState::kAlive || e.member.state == MemberState::kSuspect) {
      SendUpdates(MembershipType::kSync, id, {left});
    }
  }
  Stop();
}

void Membership::SendJoins() {
  join_timer_ = 0;
  if (!running_ || joined_) return;
  bool any = false;
  for (NodeId seed : options_.seeds) {
    if (seed == self()) continue;
    SendUpdates(MembershipType::kJoin, seed, {SelfUpdate()});
    any = true;
  }
  if (any) join_timer_ = After(options_.join_retry, [this] { SendJoins(); });
}

void Membership::PushPull(bool with_dead) {
  std::vector<NodeId> candidates;
  if (with_dead) {
    for (const auto& [id, e] : members_) {
      if (e.member.state == MemberState::kDead) candidates.push_back(id);
    }
    for (NodeId seed : options_.seeds) {
      auto it = members_.find(seed);
      const bool present = it != members_.end() && (it->second.member.state == MemberState::kAlive ||
                                                    it->second.member.state == MemberState::kSuspect);
      if (seed != self() && !present && joined_) candidates.push_back(seed);
    }
    reconnect_timer_ = After(options_.reconnect_interval, [this] { PushPull(true); });
  } else {
    candidates = AliveMembers();
    sync_timer_ = After(options_.sync_interval, [this] { PushPull(false); });
  }
  if (candidates.empty()) return;
  SendState(candidates[rng_.UniformInt(candidates.size())], MembershipType::kJoin);
}

void Membership::OnMessage(NodeId from, MessagePtr msg) {
  if (!running_ || msg->kind() != kMembershipMessageKind) return;
  const auto* m = dynamic_cast<const MembershipMessage*>(msg.get());
  if (m == nullptr) return;
  const MembershipHeader& h = m->header();
  if (h.sender != from || h.receiver != self()) {
    ++stats_.rejected_header;
    MURMUR_LOG(kWarning) << "node " << self() << ": membership message from node " << from
                         << " claims sender " << h.sender << " and receiver " << h.receiver << "; dropped";
    if (observer_ != nullptr) observer_->OnRejected(from, Rejection::kBadHeader);
    return;
  }
  if (!m->Verify(verifier_)) {
    ++stats_.rejected_signature;
    MURMUR_LOG(kWarning) << "node " << self() << ": membership message from node " << from
                         << " has a bad signature; dropped";
    if (observer_ != nullptr) observer_->OnRejected(from, Rejection::kBadSignature);
    return;
  }
  ++stats_.messages_received;
  joined_ = true;
  if (auto sender = members_.find(from); sender != members_.end()) sender->second.heard = env_.Now();
  // A full state (JOIN, SYNC) may be another side's view after a partition:
  // as memberlist's mergeState does, a member it holds dead that this node
  // holds alive or suspect is only suspected here, so that it refutes within the
  // suspicion timeout instead of being declared dead by the merge itself. (A
  // member this node does not know, or forgot, stays unknown.)
  //
  // Such a merge can suspect many members at once, at the incarnation the
  // other side last saw; each must refute before its suspicion times out, and
  // in a small group gossip alone may not bring every refutation back in time.
  // So each member the merge newly suspects is pinged at once, out of the
  // probe order: the PING carries the suspicion first (buddy system), and the
  // member's ACK carries its refutation (or, when the suspicion names an older
  // incarnation, its current one) first.
  //
  // A dead update gossiped on any other message about a member this node
  // holds alive is taken the same way: after a heal the other side's old
  // verdicts also come piggybacked, and a member this node still hears from
  // must get its suspicion timeout to refute. So is one about a member held
  // suspect that spoke to this node itself within the minimum suspicion
  // timeout: a true verdict comes at least that long after the member's last
  // word (its accuser waited that long), so this only delays a death by this
  // node's own suspicion timer, never hides it. Any other suspect is declared
  // dead at once, as SWIM says (the usual way to a death: the accuser's
  // suspicion came first).
  const bool state_exchange = h.type == MembershipType::kJoin || h.type == MembershipType::kSync;
  std::vector<NodeId> check;
  for (MemberUpdate u : m->updates()) {
    if (u.state == MemberState::kDead) {
      auto it = members_.find(u.member);
      const bool alive = it != members_.end() && it->second.member.state == MemberState::kAlive;
      const bool suspect = it != members_.end() && it->second.member.state == MemberState::kSuspect;
      const bool heard =
          suspect && it->second.heard != Nanos::min() &&
          env_.Now() - it->second.heard <
              SuspicionMinTimeout(options_.suspicion_alpha, GroupSize(), options_.probe_interval);
      if (alive || (suspect && (state_exchange || heard))) u.state = MemberState::kSuspect;
      if (alive) check.push_back(u.member);
    }
    ApplyUpdate(u, from);
    if (!running_) return;
  }
  for (NodeId member : check) {
    auto it = members_.find(member);
    if (it == members_.end() || it->second.member.state != MemberState::kSuspect) continue;
    ++stats_.merge_checks;
    Send(MembershipType::kPing, member, ++seq_, member);  // its ACK matches no probe; its updates count
  }
  switch (h.type) {
    case MembershipType::kPing: HandlePing(h); break;
    case MembershipType::kAck: HandleAck(from, h); break;
    case MembershipType::kPingReq: HandlePingReq(h); break;
    case MembershipType::kNack: HandleNack(h); break;
    case MembershipType::kJoin: SendState(from, MembershipType::kSync); break;
    case MembershipType::kSync: break;
  }
}

void Membership::Send(MembershipType type, NodeId to, std::uint32_t seq, NodeId target) {
  std::vector<MemberUpdate> updates;
  std::vector<NodeId> exclude;
  if (options_.buddy_system) {
    // Lifeguard's buddy system: tell a suspect (or presumed dead) receiver
    // first, so that it can refute now rather than when gossip reaches it.
    auto it = members_.find(to);
    if (it != members_.end() && it->second.member.state != MemberState::kAlive) {
      updates.push_back(UpdateOf(it->second));
      exclude.push_back(to);
    }
  }
  broadcasts_.Take(options_.max_piggyback - updates.size(), RetransmitLimit(), exclude, &updates);
  MembershipHeader h{type, self(), to, seq, target};
  env_.Send(to, MembershipMessage::Make(h, std::move(updates), signer_));
  ++stats_.messages_sent;
}

void Membership::SendUpdates(MembershipType type, NodeId to, std::vector<MemberUpdate> updates) {
  MembershipHeader h{type, self(), to, 0, kNoNode};
  env_.Send(to, MembershipMessage::Make(h, std::move(updates), signer_));
  ++stats_.messages_sent;
}

void Membership::SendState(NodeId to, MembershipType last_type) {
  std::vector<MemberUpdate> all;
  all.reserve(members_.size() + 1);
  all.push_back(SelfUpdate());
  for (const auto& [id, e] : members_) all.push_back(UpdateOf(e));
  for (std::size_t begin = 0; begin < all.size(); begin += options_.sync_chunk) {
    const std::size_t end = std::min(all.size(), begin + options_.sync_chunk);
    const MembershipType type = end == all.size() ? last_type : MembershipType::kSync;
    SendUpdates(type, to,
                std::vector<MemberUpdate>(all.begin() + static_cast<std::ptrdiff_t>(begin),
                                          all.begin() + static_cast<std::ptrdiff_t>(end)));
  }
}

TimerId Membership::After(Nanos delay, std::function<void()> fn) {
  auto id = std::make_shared<TimerId>(0);
  *id = env_.StartTimer(delay, [this, id, fn = std::move(fn)] {
    timers_.erase(*id);
    fn();
  });
  timers_.insert(*id);
  return *id;
}

void Membership::Cancel(TimerId& id) {
  if (id == 0) return;
  env_.CancelTimer(id);
  timers_.erase(id);
  id = 0;
}

}  // namespace murmur::membership
