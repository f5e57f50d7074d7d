// Membership: creation, lifecycle, message intake and output, and timers;
// then the member table (below, SWIM section 4.2) and the protocol period
// (SWIM sections 3.1 and 4.3, Lifeguard).
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
  const bool state_exchange = h.type == MembershipType::kJoin || h.type == MembershipType::kSync;
  std::vector<NodeId> check;
  for (MemberUpdate u : m->updates()) {
    if (state_exchange && u.state == MemberState::kDead) {
      auto it = members_.find(u.member);
      if (it != members_.end() && (it->second.member.state == MemberState::kAlive ||
                                   it->second.member.state == MemberState::kSuspect)) {
        u.state = MemberState::kSuspect;
        if (it->second.member.state == MemberState::kAlive) check.push_back(u.member);
      }
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

namespace {
constexpr double kNackFraction = 0.8;
}  // namespace

void Membership::Tick() {
  tick_timer_ = 0;
  if (!running_) return;
  FinishProbe();
  Reap();
  StartProbe();
  tick_timer_ = After(health_.Scale(options_.probe_interval), [this] { Tick(); });
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
