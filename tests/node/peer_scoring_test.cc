// PeerScores: the graylisting rule, its exponential backoff, recovery,
// separate books for node ids and addresses, the token buckets and the
// memory bound, each against the closed form of the documented defaults.
#include <doctest/doctest.h>

#include <cmath>

#include "node/transport/peer_scoring.h"

namespace murmur::node {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Time = PeerScores::TimePoint;

const Time kT0 = Time() + std::chrono::hours(1);

// Offences of one kind at one instant until the key is graylisted; returns how many it took.
int OffencesToGraylist(PeerScores& scores, NodeId peer, Offence offence, Time at) {
  for (int n = 1; n <= 1000; ++n)
    if (scores.Penalize(peer, offence, at)) return n;
  return -1;
}

TEST_CASE("undecodable updates graylist a node at -100, each repeat doubles the term up to the cap") {
  PeerScoringOptions o;  // defaults: penalty 10, threshold -100, recovery 1/s, 30 s doubling, cap 1 h
  PeerScores scores(o);
  // A burst: ceil(100 / 10) = 10 offences.
  CHECK(OffencesToGraylist(scores, 5, Offence::kInvalidUpdate, kT0) == 10);
  CHECK(scores.IsGraylisted(5, kT0 + milliseconds(29'999)));
  CHECK_FALSE(scores.IsGraylisted(5, kT0 + seconds(30)));
  CHECK_FALSE(scores.IsGraylisted(6, kT0));
  // The score restarted at -50 and regained 30 in the 30 s term: -20, so
  // ceil(80 / 10) = 8 offences put it back, for 60 s.
  const Time t1 = kT0 + seconds(30);
  CHECK(scores.Score(5, t1) == doctest::Approx(-20));
  CHECK(OffencesToGraylist(scores, 5, Offence::kInvalidUpdate, t1) == 8);
  CHECK(scores.GraylistRemaining(5, t1) == seconds(60));
  // Then 120 s, 240 s, ... capped at 1 h (30 s * 2^7 = 64 min > 60 min).
  Time t = t1 + seconds(60);
  for (int k = 2; k <= 8; ++k) {
    CAPTURE(k);
    REQUIRE(OffencesToGraylist(scores, 5, Offence::kInvalidUpdate, t) > 0);
    const Nanos expected = std::min<Nanos>(seconds(30) * (1 << k), std::chrono::hours(1));
    CHECK(scores.GraylistRemaining(5, t) == expected);
    t += expected;
  }
}

TEST_CASE("at 100 offences per second recovery adds one: the 11th graylists") {
  PeerScores scores;
  // n offences 10 ms apart: score -10 n + 0.01 (n - 1); at or below -100 first at n = 11.
  int n = 0;
  for (int i = 0; i < 20 && n == 0; ++i)
    if (scores.Penalize(7, Offence::kInvalidUpdate, kT0 + milliseconds(10 * i))) n = i + 1;
  CHECK(n == 11);
}

TEST_CASE("one offence every 10 s is forgiven: the score never goes below one penalty") {
  PeerScores scores;
  for (int i = 0; i < 100; ++i) {
    const Time t = kT0 + seconds(10 * i);
    CHECK_FALSE(scores.Penalize(3, Offence::kInvalidUpdate, t));
    CHECK(scores.Score(3, t) == doctest::Approx(-10));
  }
  CHECK_FALSE(scores.IsGraylisted(3, kT0 + seconds(1000)));
}

TEST_CASE("addresses and node ids are separate books, offences weigh as documented") {
  PeerScores scores;
  // Handshake failures: 100 / 20 = 5 for an address.
  int n = 0;
  for (int i = 1; i <= 10 && n == 0; ++i)
    if (scores.Penalize(std::string("10.0.0.1"), Offence::kHandshakeFailure, kT0)) n = i;
  CHECK(n == 5);
  CHECK(scores.IsGraylisted(std::string("10.0.0.1"), kT0));
  CHECK_FALSE(scores.IsGraylisted(std::string("10.0.0.2"), kT0));
  CHECK_FALSE(scores.IsGraylisted(1, kT0));
  // Bad signatures: 100 / 25 = 4; protocol violations: 100 / 20 = 5.
  CHECK(OffencesToGraylist(scores, 1, Offence::kBadSignature, kT0) == 4);
  CHECK(OffencesToGraylist(scores, 2, Offence::kProtocolViolation, kT0) == 5);
}

TEST_CASE("token buckets allow the burst, then the rate") {
  PeerScores scores;  // handshakes 5/s burst 20; messages 1000/s burst 2000
  const std::string a = "192.0.2.7";
  int allowed = 0;
  for (int i = 0; i < 30; ++i) allowed += scores.AllowHandshake(a, kT0) ? 1 : 0;
  CHECK(allowed == 20);
  allowed = 0;
  for (int i = 0; i < 30; ++i) allowed += scores.AllowHandshake(a, kT0 + seconds(2)) ? 1 : 0;
  CHECK(allowed == 10);                                         // 2 s at 5/s
  CHECK(scores.AllowHandshake("192.0.2.8", kT0 + seconds(2)));  // another address has its own bucket
  allowed = 0;
  for (int i = 0; i < 3000; ++i) allowed += scores.AllowMessage(a, kT0) ? 1 : 0;
  CHECK(allowed == 2000);
  allowed = 0;
  for (int i = 0; i < 3000; ++i) allowed += scores.AllowMessage(a, kT0 + milliseconds(500)) ? 1 : 0;
  CHECK(allowed == 500);
}

TEST_CASE("the books are bounded: the least recently touched key that is not graylisted goes") {
  PeerScoringOptions o;
  o.max_tracked = 2;
  PeerScores scores(o);
  REQUIRE(OffencesToGraylist(scores, 1, Offence::kInvalidUpdate, kT0) == 10);
  scores.Penalize(2, Offence::kInvalidUpdate, kT0 + seconds(1));
  scores.Penalize(3, Offence::kInvalidUpdate, kT0 + seconds(2));  // evicts 2, not the graylisted 1
  CHECK(scores.IsGraylisted(1, kT0 + seconds(2)));
  CHECK(scores.Score(2, kT0 + seconds(2)) == 0);
  CHECK(scores.Score(3, kT0 + seconds(2)) == doctest::Approx(-10));
}

}  // namespace
}  // namespace murmur::node
