// PeerScores: misbehaviour scores, graylisting with exponential backoff, and
// per-address token-bucket rate limits for the Transport (docs/security.md,
// "Misbehaving peers").
//
// Offences are booked against one of two keys. After authentication, against
// the peer's node id: an undecodable update, a bad signature or a frame that
// fails authentication, a protocol violation (malformed record, bad frame
// length). Before it, against the remote IP address (the port is ephemeral):
// a failed handshake or garbage. Each key has a score, 0 when clean; an
// offence subtracts its penalty, and the score recovers toward 0 at
// `recovery_per_second`. At or below `graylist_threshold` the key is
// graylisted for graylist_base * 2^(k-1), where k counts its graylistings
// within `offence_memory` (at most `graylist_max`), and its score restarts at
// half the threshold, so a repeat offender is back on the list after half as
// many offences and for twice as long.
//
// Rate limits per remote IP address are token buckets (rate r per second,
// capacity b): handshakes started, and application messages received.
//
// Memory: at most `max_tracked` keys of each kind; when full, the key touched
// least recently that is not graylisted is forgotten (a graylisted key is
// never forgotten early; when every key is graylisted a new one is not
// tracked).
//
// Time is passed in, so that the rules can be checked exactly in tests.
// Thread-safety: one thread at a time (the Transport's io thread).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>

#include "core/env.h"

namespace murmur::node {

enum class Offence {
  kInvalidUpdate,      // a payload that does not decode (or of an unknown kind)
  kBadSignature,       // a signature that does not verify; a frame failing authentication
  kProtocolViolation,  // a malformed record, a bad frame length, a record out of order
  kHandshakeFailure,   // a failed handshake (wrong network, bad certificate, garbage)
  kRefusedUpdate,      // a decoded message its job refused (core::Refusal: wrong length or encoding,
                       // not finite, implausible, federated control from a non-aggregator)
};

const char* OffenceName(Offence offence);

struct PeerScoringOptions {
  // Penalties subtracted from the score (which starts at 0).
  double invalid_update_penalty = 10;
  double bad_signature_penalty = 25;
  double protocol_violation_penalty = 20;
  double handshake_failure_penalty = 20;
  double refused_update_penalty = 10;
  // Graylisted at or below this score: the 10th undecodable update in a row.
  double graylist_threshold = -100;
  // Score regained per second, up to 0: one offence per 10 s is forgiven.
  double recovery_per_second = 1;
  // First graylisting term; each further one within offence_memory doubles it, up to graylist_max.
  Nanos graylist_base = std::chrono::seconds(30);
  Nanos graylist_max = std::chrono::hours(1);
  Nanos offence_memory = std::chrono::hours(1);
  // Token buckets per remote IP address.
  double handshakes_per_second = 5;
  double handshake_burst = 20;
  double messages_per_second = 1000;
  double message_burst = 2000;
  // Keys kept per kind (node ids; addresses).
  std::size_t max_tracked = 4096;
};

class PeerScores {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;

  explicit PeerScores(PeerScoringOptions options = {});

  // Books an offence. Returns true when it put the key on the graylist.
  bool Penalize(NodeId peer, Offence offence, TimePoint now);
  bool Penalize(const std::string& address, Offence offence, TimePoint now);

  bool IsGraylisted(NodeId peer, TimePoint now) const { return GraylistRemaining(peer, now) > Nanos(0); }
  bool IsGraylisted(const std::string& address, TimePoint now) const {
    return GraylistRemaining(address, now) > Nanos(0);
  }
  // Time left on the graylist (0 when not on it).
  Nanos GraylistRemaining(NodeId peer, TimePoint now) const;
  Nanos GraylistRemaining(const std::string& address, TimePoint now) const;
  // The current score (0 for a key never penalized).
  double Score(NodeId peer, TimePoint now) const;
  double Score(const std::string& address, TimePoint now) const;

  // Take one token from the address's bucket; false when it is empty.
  bool AllowHandshake(const std::string& address, TimePoint now);
  bool AllowMessage(const std::string& address, TimePoint now);

  const PeerScoringOptions& options() const { return options_; }

 private:
  struct Bucket {
    double tokens = -1;  // < 0: not yet used (full)
    TimePoint last{};
    bool Take(double rate, double burst, TimePoint now);
  };
  struct Entry {
    double score = 0;
    TimePoint scored{};  // when `score` was last brought up to date
    TimePoint graylisted_until{};
    TimePoint last_graylisted{};
    int graylistings = 0;  // within offence_memory of the last one
    TimePoint touched{};
    Bucket handshakes, messages;
  };
  template <typename Key>
  using Book = std::map<Key, Entry>;

  double Penalty(Offence offence) const;
  double CurrentScore(const Entry& e, TimePoint now) const;
  template <typename Key>
  Entry* Find(Book<Key>& book, const Key& key, TimePoint now);
  template <typename Key>
  bool PenalizeIn(Book<Key>& book, const Key& key, Offence offence, TimePoint now);
  template <typename Key>
  Nanos RemainingIn(const Book<Key>& book, const Key& key, TimePoint now) const;

  PeerScoringOptions options_;
  Book<NodeId> nodes_;
  Book<std::string> addresses_;
};

}  // namespace murmur::node
