#include "node/transport/peer_scoring.h"

#include <algorithm>

#include "core/status.h"

namespace murmur::node {

const char* OffenceName(Offence offence) {
  switch (offence) {
    case Offence::kInvalidUpdate: return "invalid update";
    case Offence::kBadSignature: return "bad signature or failed authentication";
    case Offence::kProtocolViolation: return "protocol violation";
    case Offence::kHandshakeFailure: return "handshake failure";
    case Offence::kRefusedUpdate: return "refused update";
  }
  return "offence";
}

PeerScores::PeerScores(PeerScoringOptions options) : options_(std::move(options)) {
  MURMUR_CHECK(options_.graylist_threshold < 0);
  MURMUR_CHECK(options_.recovery_per_second >= 0);
  MURMUR_CHECK(options_.graylist_base > Nanos(0) && options_.graylist_max >= options_.graylist_base);
  MURMUR_CHECK(options_.max_tracked >= 1);
}

double PeerScores::Penalty(Offence offence) const {
  switch (offence) {
    case Offence::kInvalidUpdate: return options_.invalid_update_penalty;
    case Offence::kBadSignature: return options_.bad_signature_penalty;
    case Offence::kProtocolViolation: return options_.protocol_violation_penalty;
    case Offence::kHandshakeFailure: return options_.handshake_failure_penalty;
    case Offence::kRefusedUpdate: return options_.refused_update_penalty;
  }
  return 0;
}

double PeerScores::CurrentScore(const Entry& e, TimePoint now) const {
  const double seconds = std::chrono::duration<double>(now - e.scored).count();
  return std::min(0.0, e.score + options_.recovery_per_second * std::max(0.0, seconds));
}

// The entry for `key`, made when absent (nullptr when the book is full of graylisted keys).
template <typename Key>
PeerScores::Entry* PeerScores::Find(Book<Key>& book, const Key& key, TimePoint now) {
  auto it = book.find(key);
  if (it == book.end()) {
    if (book.size() >= options_.max_tracked) {
      auto victim = book.end();
      for (auto j = book.begin(); j != book.end(); ++j) {
        if (j->second.graylisted_until > now) continue;
        if (victim == book.end() || j->second.touched < victim->second.touched) victim = j;
      }
      if (victim == book.end()) return nullptr;
      book.erase(victim);
    }
    it = book.emplace(key, Entry{}).first;
    it->second.scored = now;
  }
  it->second.touched = now;
  return &it->second;
}

template <typename Key>
bool PeerScores::PenalizeIn(Book<Key>& book, const Key& key, Offence offence, TimePoint now) {
  Entry* e = Find(book, key, now);
  if (e == nullptr) return false;
  e->score = CurrentScore(*e, now) - Penalty(offence);
  e->scored = now;
  if (e->graylisted_until > now || e->score > options_.graylist_threshold) return false;
  if (e->graylistings > 0 && now - e->last_graylisted > options_.offence_memory) e->graylistings = 0;
  const int k = std::min(e->graylistings, 30);
  ++e->graylistings;
  const double term =
      std::min(static_cast<double>(options_.graylist_base.count()) * static_cast<double>(1u << k),
               static_cast<double>(options_.graylist_max.count()));
  e->graylisted_until = now + Nanos(static_cast<std::int64_t>(term));
  e->last_graylisted = now;
  e->score = options_.graylist_threshold / 2;
  return true;
}

template <typename Key>
Nanos PeerScores::RemainingIn(const Book<Key>& book, const Key& key, TimePoint now) const {
  auto it = book.find(key);
  if (it == book.end() || it->second.graylisted_until <= now) return Nanos(0);
  return std::chrono::duration_cast<Nanos>(it->second.graylisted_until - now);
}

bool PeerScores::Penalize(NodeId peer, Offence offence, TimePoint now) {
  return PenalizeIn(nodes_, peer, offence, now);
}
bool PeerScores::Penalize(const std::string& address, Offence offence, TimePoint now) {
  return PenalizeIn(addresses_, address, offence, now);
}
Nanos PeerScores::GraylistRemaining(NodeId peer, TimePoint now) const {
  return RemainingIn(nodes_, peer, now);
}
Nanos PeerScores::GraylistRemaining(const std::string& address, TimePoint now) const {
  return RemainingIn(addresses_, address, now);
}

double PeerScores::Score(NodeId peer, TimePoint now) const {
  auto it = nodes_.find(peer);
  return it == nodes_.end() ? 0 : CurrentScore(it->second, now);
}
double PeerScores::Score(const std::string& address, TimePoint now) const {
  auto it = addresses_.find(address);
  return it == addresses_.end() ? 0 : CurrentScore(it->second, now);
}

bool PeerScores::Bucket::Take(double rate, double burst, TimePoint now) {
  if (tokens < 0) {
    tokens = burst;
  } else {
    const double seconds = std::max(0.0, std::chrono::duration<double>(now - last).count());
    tokens = std::min(burst, tokens + rate * seconds);
  }
  last = now;
  if (tokens < 1) return false;
  tokens -= 1;
  return true;
}

bool PeerScores::AllowHandshake(const std::string& address, TimePoint now) {
  Entry* e = Find(addresses_, address, now);
  return e == nullptr || e->handshakes.Take(options_.handshakes_per_second, options_.handshake_burst, now);
}

bool PeerScores::AllowMessage(const std::string& address, TimePoint now) {
  Entry* e = Find(addresses_, address, now);
  return e == nullptr || e->messages.Take(options_.messages_per_second, options_.message_burst, now);
}

}  // namespace murmur::node
