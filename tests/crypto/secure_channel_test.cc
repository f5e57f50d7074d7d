// SecureChannel: round trips, tampering, replay, reordering, rekeying and the
// message limit, between two channels built from one Split().
#include <doctest/doctest.h>

#include <algorithm>
#include <utility>

#include "crypto/secure_channel.h"

namespace murmur::crypto {
namespace {

std::pair<SecureChannel, SecureChannel> Pair(ChannelOptions options = {}) {
  CipherKey k1{}, k2{};
  k1.fill(0x11);
  k2.fill(0x22);
  CipherState a_send, a_recv, b_send, b_recv;
  a_send.InitializeKey(k1);
  b_recv.InitializeKey(k1);
  b_send.InitializeKey(k2);
  a_recv.InitializeKey(k2);
  return {SecureChannel(a_send, a_recv, options), SecureChannel(b_send, b_recv, options)};
}

Bytes Msg(std::size_t n, std::uint8_t seed) {
  Bytes m(n);
  for (std::size_t i = 0; i < n; ++i) m[i] = static_cast<std::uint8_t>(seed + 7 * i);
  return m;
}

TEST_CASE("messages round trip in both directions and each ciphertext differs") {
  auto [a, b] = Pair();
  Bytes c1, c2, p;
  for (std::size_t n : {0, 1, 100, 65519}) {
    CAPTURE(n);
    Bytes m = Msg(n, 3);
    Bytes ct;
    REQUIRE(a.Seal(m, &ct).ok());
    CHECK(ct.size() == n + 16);
    Bytes pt;
    REQUIRE(b.Open(ct, &pt).ok());
    CHECK(pt == m);
    ct.clear();
    pt.clear();
    REQUIRE(b.Seal(m, &ct).ok());
    REQUIRE(a.Open(ct, &pt).ok());
    CHECK(pt == m);
  }
  REQUIRE(a.Seal(Msg(10, 1), &c1).ok());
  REQUIRE(a.Seal(Msg(10, 1), &c2).ok());
  CHECK(c1 != c2);  // the same plaintext under consecutive nonces
  CHECK(a.Seal(Msg(65520, 0), &p).code() == StatusCode::kInvalidArgument);
}

TEST_CASE("every single flipped bit of a ciphertext fails authentication") {
  auto [a, b] = Pair();
  Bytes ct;
  REQUIRE(a.Seal(Msg(40, 9), &ct).ok());
  for (std::size_t bit = 0; bit < ct.size() * 8; ++bit) {
    CAPTURE(bit);
    auto [a2, b2] = Pair();
    Bytes c;
    REQUIRE(a2.Seal(Msg(40, 9), &c).ok());
    c[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
    Bytes pt;
    CHECK(b2.Open(c, &pt).code() == StatusCode::kUnauthenticated);
    CHECK(pt.empty());
    CHECK(b2.receive_closed());
  }
  Bytes pt;
  CHECK(b.Open(ByteSpan(ct).first(15), &pt).code() == StatusCode::kDataLoss);  // shorter than the tag
}

TEST_CASE("a replayed frame fails, and the channel stays closed afterwards") {
  auto [a, b] = Pair();
  Bytes c0, c1, pt;
  REQUIRE(a.Seal(Msg(5, 1), &c0).ok());
  REQUIRE(a.Seal(Msg(5, 2), &c1).ok());
  REQUIRE(b.Open(c0, &pt).ok());
  Status replay = b.Open(c0, &pt);
  CHECK(replay.code() == StatusCode::kUnauthenticated);
  CHECK(replay.message().find("replayed") != std::string::npos);
  // Even the genuine next frame is refused: the session must be torn down.
  CHECK(b.Open(c1, &pt).code() == StatusCode::kFailedPrecondition);
}

TEST_CASE("reordered frames fail") {
  auto [a, b] = Pair();
  Bytes c0, c1, pt;
  REQUIRE(a.Seal(Msg(5, 1), &c0).ok());
  REQUIRE(a.Seal(Msg(5, 2), &c1).ok());
  CHECK(b.Open(c1, &pt).code() == StatusCode::kUnauthenticated);
}

TEST_CASE("a frame from the other direction (reflection) fails") {
  auto [a, b] = Pair();
  Bytes c0, pt;
  REQUIRE(a.Seal(Msg(5, 1), &c0).ok());
  CHECK(a.Open(c0, &pt).code() == StatusCode::kUnauthenticated);
}

TEST_CASE("both sides rekey every rekey_interval messages and keep agreeing") {
  ChannelOptions opt;
  opt.rekey_interval = 4;
  auto [a, b] = Pair(opt);
  auto [plain_a, plain_b] = Pair();  // no rekey within this test's 20 messages
  for (int i = 0; i < 20; ++i) {
    CAPTURE(i);
    Bytes m = Msg(33, static_cast<std::uint8_t>(i));
    Bytes ct, ct_plain, pt;
    REQUIRE(a.Seal(m, &ct).ok());
    REQUIRE(plain_a.Seal(m, &ct_plain).ok());
    // Before the first rekey the keys are the same; after it they differ.
    if (i < 4) {
      CHECK(ct == ct_plain);
    } else {
      CHECK(ct != ct_plain);
    }
    REQUIRE(b.Open(ct, &pt).ok());
    CHECK(pt == m);
  }
  CHECK(a.rekeys_sent() == 5);
  // A receiver that does not rekey on the same schedule cannot read past the first rekey.
  ChannelOptions other;
  other.rekey_interval = 5;
  auto [a3, b3] = Pair(opt);
  auto [unused, b5] = Pair(other);
  bool failed = false;
  for (int i = 0; i < 6 && !failed; ++i) {
    Bytes ct, pt;
    REQUIRE(a3.Seal(Msg(8, 1), &ct).ok());
    failed = !b5.Open(ct, &pt).ok();
  }
  CHECK(failed);
}

TEST_CASE("sending stops at max_messages") {
  ChannelOptions opt;
  opt.max_messages = 3;
  auto [a, b] = Pair(opt);
  Bytes ct;
  for (int i = 0; i < 3; ++i) REQUIRE(a.Seal(Msg(1, 1), &ct).ok());
  CHECK(a.Seal(Msg(1, 1), &ct).code() == StatusCode::kResourceExhausted);
  CHECK(a.messages_sent() == 3);
}

TEST_CASE("in-place sealing and opening give the same bytes as the appending forms, rekeys included") {
  ChannelOptions o;
  o.rekey_interval = 3;
  auto [a, b] = Pair(o);    // appending forms
  auto [a2, b2] = Pair(o);  // in-place forms, same keys
  for (std::size_t i = 0; i < 10; ++i) {
    CAPTURE(i);
    const std::size_t n = i == 9 ? 65519 : 37 * i;
    Bytes m = Msg(n, static_cast<std::uint8_t>(i));
    Bytes expected;
    REQUIRE(a.Seal(m, &expected).ok());
    Bytes buffer(2 + n);  // a prefix that must stay as it is, then the plaintext
    buffer[0] = 0xAA;
    std::copy(m.begin(), m.end(), buffer.begin() + 2);
    REQUIRE(a2.SealInPlace(&buffer, 2).ok());
    CHECK(buffer[0] == 0xAA);
    CHECK(Bytes(buffer.begin() + 2, buffer.end()) == expected);
    std::span<std::uint8_t> plaintext;
    REQUIRE(b2.OpenInPlace(std::span<std::uint8_t>(buffer).subspan(2), &plaintext).ok());
    CHECK(Bytes(plaintext.begin(), plaintext.end()) == m);
    CHECK(plaintext.data() == buffer.data() + 2);
  }
  Bytes big(65520);
  CHECK(a2.SealInPlace(&big, 0).code() == StatusCode::kInvalidArgument);
}

TEST_CASE("in-place opening refuses a flipped bit, a replay and a short message, then stays closed") {
  auto [a, b] = Pair();
  Bytes m1 = Msg(100, 1), m2 = Msg(100, 2);
  REQUIRE(a.SealInPlace(&m1, 0).ok());
  REQUIRE(a.SealInPlace(&m2, 0).ok());
  Bytes copy = m1;
  std::span<std::uint8_t> pt;
  REQUIRE(b.OpenInPlace(copy, &pt).ok());
  copy = m1;  // replay of message 0 where message 1 is due
  CHECK(b.OpenInPlace(copy, &pt).code() == StatusCode::kUnauthenticated);
  CHECK(b.OpenInPlace(m2, &pt).code() == StatusCode::kFailedPrecondition);

  auto [c, d] = Pair();
  Bytes m3 = Msg(50, 3);
  REQUIRE(c.SealInPlace(&m3, 0).ok());
  m3[10] ^= 1;
  CHECK(d.OpenInPlace(m3, &pt).code() == StatusCode::kUnauthenticated);
  auto [e, f] = Pair();
  Bytes short_message(15);
  CHECK(f.OpenInPlace(short_message, &pt).code() == StatusCode::kDataLoss);
}

}  // namespace
}  // namespace murmur::crypto
