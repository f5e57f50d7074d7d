// Membership: SWIM failure detection and membership (Das, Gupta and
// Motivala, "SWIM: Scalable Weakly-consistent Infection-style Process Group
// Membership Protocol", DSN 2002) with Lifeguard's refinements (Dadgar,
// Phillips and Currey, arXiv:1707.00788, 2018). docs/membership.md describes
// the protocol, its parameters and its wire format.
//
// Each protocol period (probe_interval, scaled by the Local Health
// Multiplier) a node probes the next member of a randomly permuted
// round-robin list (SWIM section 4.3): PING, and if no ACK came within
// probe_timeout, PING-REQ to `indirect_probes` other members, which probe on
// its behalf and answer ACK, or NACK when the target stayed silent
// (Lifeguard). A member with no ACK by the end of the period becomes
// *suspect* (SWIM 4.2); the suspicion is gossiped, and the member refutes it by raising
// its incarnation number. Otherwise it is declared *dead* when the dynamic
// suspicion timeout runs out (Lifeguard: from Max toward Min as
// independent confirmations arrive). A ping to a suspect member carries the
// suspicion so it can refute at once (Lifeguard's buddy system); besides the
// period's probe, up to `indirect_probes` suspects are pinged so each
// period, in turn, so that one lost ACK does not leave a live member to
// time out into a death before the round-robin comes back to it.
// Updates spread by piggybacking on every message, each at most
// retransmit_mult * ceil(log10(n + 1)) times (membership/broadcast_queue.h).
//
// Joining: a node sends JOIN (its own alive update) to its seeds until one
// answers with its state (SYNC). The same push-pull exchange runs every
// sync_interval with a random member (anti-entropy), and every
// reconnect_interval with a random dead member or an absent seed, which
// heals partitions. Leave() tells every member that this node left. Dead
// and left members are forgotten after reap_after.
//
// Every message is signed by its sender (MembershipSigner) and verified
// against the sender's key (MembershipVerifier); a message whose sender is not
// the node the Env says it came from, that is addressed to another node, or
// whose signature fails is dropped, counted in stats() and reported to the
// observer (OnRejected: the host books it against the sender).
//
// A member enters the view, comes back, changes its address or leaves only
// on its own signed statement (an alive or left update signed by the
// member, checked by MembershipVerifier::VerifyStatement), whoever relays
// it; a forged one is dropped and its relay reported. Unknown members never
// enter on a suspicion or a death. One peer brings at most
// `max_members_per_peer` members into the view (counted while they are in
// it), and a message carries at most 64 updates (the decoder refuses more).
//
// Membership acts only through the Env (timers, Send, MakeRng(kMembership)).
// Thread-safety: the Env's executor only. The Env, the signer, the verifier
// and the observer must outlive the Membership.
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/env.h"
#include "core/status.h"
#include "membership/broadcast_queue.h"
#include "membership/lifeguard.h"
#include "membership/messages.h"

namespace murmur::membership {

struct MembershipOptions {
  std::string address;  // gossiped with this node's alive updates (the daemon's "host:port"), <= 128 bytes
  std::vector<NodeId> seeds;                       // members to JOIN through (this node's own id is skipped)
  Nanos probe_interval = std::chrono::seconds(1);  // SWIM's protocol period T'
  Nanos probe_timeout = std::chrono::milliseconds(500);  // direct ACK wait before PING-REQ; < probe_interval
  int indirect_probes = 3;                               // k of SWIM's PING-REQ
  int retransmit_mult = 4;                               // lambda: limit = lambda * ceil(log10(n + 1))
  std::size_t max_piggyback = 16;                        // updates on a PING / ACK / PING-REQ / NACK, 1..64
  std::size_t sync_chunk = 64;                           // updates per JOIN / SYNC message, 1..64
  std::size_t max_members_per_peer = 256;  // members one peer may bring into the view (while they are in it)
  double suspicion_alpha = 5;              // Lifeguard's alpha: Min = alpha * log10(n) * T'
  double suspicion_beta = 6;               // Lifeguard's beta: Max = beta * Min
  int suspicion_k = 3;                     // Lifeguard's K: confirmations that bring Min
  bool dynamic_suspicion = true;           // false: the timeout is always Min (SWIM)
  int max_local_health = 8;                // Lifeguard's S; 1 disables the LHM
  bool buddy_system = true;                // a ping to a suspect member carries its suspicion
  Nanos join_retry = std::chrono::seconds(1);          // JOIN again while no member has answered
  Nanos sync_interval = std::chrono::seconds(30);      // push-pull with a random alive member; 0: never
  Nanos reconnect_interval = std::chrono::seconds(5);  // push-pull with a dead member / absent seed; 0: never
  Nanos reap_after = std::chrono::seconds(60);         // dead and left members are forgotten after this
};

struct Member {
  NodeId id = kNoNode;
  MemberState state = MemberState::kAlive;
  std::uint64_t incarnation = 0;
  std::string address;
  Nanos since{0};  // when this node last changed the member's state
  // The smoothed round trip of this node's direct probes to the member, PING
  // to ACK, as TCP's SRTT (RFC 6298: srtt = 7/8 srtt + 1/8 sample, the first
  // sample taken whole); 0 until one is answered.
  Nanos rtt{0};
  // The key its last statement verified with (an address to dial is then the member's own word).
  std::optional<crypto::SignPublicKey> key;
};

// Why a message was dropped (MembershipObserver::OnRejected).
enum class Rejection {
  kBadSignature,     // the message's signature does not verify with the sender's key
  kBadHeader,        // sender or receiver fields that are not the session's
  kForgedStatement,  // an alive or left update whose statement does not check out
};

// Callbacks on state changes, from the Env's executor. Defaults do nothing.
class MembershipObserver {
 public:
  virtual ~MembershipObserver() = default;
  // A new member, a member that came back, or an alive member's new address.
  virtual void OnMemberAlive(const Member& m) { (void)m; }
  virtual void OnMemberSuspect(const Member& m) { (void)m; }
  // m.state is kDead (failure detected) or kLeft (graceful leave).
  virtual void OnMemberDead(const Member& m) { (void)m; }
  // A message from `from` was dropped for `why` (the host may book it).
  virtual void OnRejected(NodeId from, Rejection why) {
    (void)from;
    (void)why;
  }
};

// Members other than this node, by state (dead counts left members too, until reaped).
struct MembershipCounts {
  std::size_t alive = 0;
  std::size_t suspect = 0;
  std::size_t dead = 0;
};

struct MembershipStats {
  std::uint64_t messages_sent = 0;
  std::uint64_t messages_received = 0;      // accepted (signature and header good)
  std::uint64_t rejected_signature = 0;     // forged, unsigned or from an unknown key
  std::uint64_t rejected_header = 0;        // sender is not the Env's sender, or addressed to another node
  std::uint64_t forged_statements = 0;      // alive / left updates whose statement failed: dropped
  std::uint64_t unverified_statements = 0;  // ... that could not be checked (no key): ignored
  std::uint64_t members_refused = 0;        // new members over the introducing peer's max_members_per_peer
  std::uint64_t probes = 0;
  std::uint64_t probes_failed = 0;  // no ACK, direct or indirect, by the end of the period
  std::uint64_t ping_reqs_sent = 0;
  std::uint64_t nacks_received = 0;
  std::uint64_t suspicions_raised = 0;  // members this node suspected after a failed probe
  std::uint64_t deaths_declared = 0;    // suspicions that timed out here
  std::uint64_t refutations = 0;        // times this node raised its incarnation
  std::uint64_t stale_accusations = 0;  // accusations of an older incarnation, answered with the current one
  std::uint64_t merge_checks =
      0;  // PINGs to members a dead verdict (a state exchange, gossip) turned suspect
  std::uint64_t suspect_checks = 0;  // PINGs to suspects besides the period's probe
};

class Membership final : public MessageSink {
 public:
  // InvalidArgument naming the option when `options` are out of range.
  static Result<std::unique_ptr<Membership>> Create(Env& env, MembershipOptions options,
                                                    const MembershipSigner& signer,
                                                    const MembershipVerifier& verifier,
                                                    MembershipObserver* observer = nullptr);
  ~Membership() override;
  Membership(const Membership&) = delete;
  Membership& operator=(const Membership&) = delete;

  // Joins through the seeds (none: this node starts a group) and starts probing.
  void Start();
  // Graceful leave: every known member is told, then the node stops.
  void Leave();
  // States a new address (a daemon that learned its relays): a new
  // incarnation, announced like a refutation, so that every member takes
  // the address. InvalidArgument over 128 bytes.
  Status SetAddress(std::string address);
  const std::string& address() const { return options_.address; }
  // Stops without a word (timers cancelled, messages ignored), as a crash would.
  void Stop();
  // Handles membership messages; other kinds are ignored.
  void OnMessage(NodeId from, MessagePtr msg) override;

  // The view: members other than this node that are not yet reaped, by id.
  std::vector<Member> Members() const;
  // Ids of the alive members (suspect ones excluded), ascending.
  std::vector<NodeId> AliveMembers() const;
  std::optional<Member> Find(NodeId id) const;
  MembershipCounts counts() const;

  NodeId self() const { return env_.self(); }
  std::uint64_t incarnation() const { return incarnation_; }
  int local_health() const { return health_.score(); }
  Nanos protocol_period() const { return health_.Scale(options_.probe_interval); }
  bool running() const { return running_; }
  const MembershipStats& stats() const { return stats_; }
  const MembershipOptions& options() const { return options_; }

 private:
  struct Entry {
    Member member;
    NodeId origin = kNoNode;  // who declared the current state
    // The member's last alive or left statement, relayed with its updates.
    crypto::Signature statement{};
    std::vector<std::uint8_t> credential;
    NodeId introduced_by = kNoNode;  // the peer whose message brought it into the view
    std::unique_ptr<Suspicion> suspicion;
    TimerId suspicion_timer = 0;
    Nanos heard = Nanos::min();  // when a message of the member itself last came
  };
  struct Probe {
    std::uint32_t seq = 0;
    NodeId target = kNoNode;
    Nanos sent{0};
    bool acked = false;
    bool direct = false;
    int expected_nacks = 0;
    int nacks = 0;
  };
  struct Relay {
    NodeId requester = kNoNode;
    std::uint32_t requester_seq = 0;
    NodeId target = kNoNode;
    TimerId timer = 0;
  };

  Membership(Env& env, MembershipOptions options, const MembershipSigner& signer,
             const MembershipVerifier& verifier, MembershipObserver* observer);

  // Protocol period.
  void Tick();
  void StartProbe();
  void CheckSuspects();
  void OnProbeTimeout();
  void FinishProbe();
  NodeId NextProbeTarget();
  void HandlePing(const MembershipHeader& h);
  void HandlePingReq(const MembershipHeader& h);
  void HandleAck(NodeId from, const MembershipHeader& h);
  void HandleNack(const MembershipHeader& h);

  // State and dissemination.
  // `from`: the peer whose message carried it (self for this node's own conclusions).
  void ApplyUpdate(const MemberUpdate& u, NodeId from);
  // Whether a statement about another member may take effect: verified (its
  // key in *key), else counted, and a forgery reported against `from`.
  bool Verified(const MemberUpdate& u, NodeId from, crypto::SignPublicKey* key);
  // Signs `u` (this node's own alive or left update) as its statement.
  void Sign(MemberUpdate& u) const;
  void Refute(const MemberUpdate& u);
  void SetState(Entry& e, MemberState state, std::uint64_t incarnation, NodeId origin,
                bool address_changed = false);
  void StartSuspicion(Entry& e, NodeId origin);
  void ScheduleSuspicionTimer(Entry& e);
  void OnSuspicionTimeout(NodeId id);
  void Reap();
  MemberUpdate SelfUpdate() const;
  MemberUpdate UpdateOf(const Entry& e) const;
  std::size_t GroupSize() const;  // alive and suspect members, self included
  int RetransmitLimit() const;

  // Messages and timers (membership.cc).
  void Send(MembershipType type, NodeId to, std::uint32_t seq, NodeId target);
  void SendUpdates(MembershipType type, NodeId to, std::vector<MemberUpdate> updates);
  void SendState(NodeId to, MembershipType last_type);
  void SendJoins();
  void PushPull(bool with_dead);
  TimerId After(Nanos delay, std::function<void()> fn);
  void Cancel(TimerId& id);

  Env& env_;
  MembershipOptions options_;
  const MembershipSigner& signer_;
  const MembershipVerifier& verifier_;
  MembershipObserver* observer_;
  Rng rng_;
  LocalHealth health_;
  BroadcastQueue broadcasts_;
  std::map<NodeId, Entry> members_;
  std::map<NodeId, std::size_t> introduced_;         // members in the view by the peer that brought them
  mutable std::optional<MemberUpdate> self_update_;  // SelfUpdate, signed, until it changes
  std::vector<NodeId> probe_order_;
  std::size_t probe_pos_ = 0;
  NodeId suspect_cursor_ = 0;  // CheckSuspects goes on from the first suspect at or after it
  std::optional<Probe> probe_;
  std::map<std::uint32_t, Relay> relays_;
  std::set<TimerId> timers_;  // every pending timer, cancelled by Stop
  TimerId tick_timer_ = 0, probe_timer_ = 0, join_timer_ = 0, sync_timer_ = 0, reconnect_timer_ = 0;
  std::uint64_t incarnation_ = 0;
  std::uint32_t seq_ = 0;
  bool running_ = false;
  bool joined_ = false;
  bool left_ = false;
  MembershipStats stats_;
};

}  // namespace murmur::membership
