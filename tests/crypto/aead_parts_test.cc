// AeadSlot (ChaCha20-Poly1305 in pieces) against libsodium's one-shot
// crypto_aead_chacha20poly1305_ietf with the Noise nonce, and the
// SecureChannel slot forms against Seal / Open; the same for AES-256-GCM
// (Noise's AESGCM, big-endian nonce, from OpenSSL's libcrypto) against a
// second implementation, libsodium's crypto_aead_aes256gcm.
#include <doctest/doctest.h>
#include <sodium.h>

#include <algorithm>
#include <array>
#include <thread>
#include <vector>

#include "crypto/aead_parts.h"
#include "crypto/aes_gcm.h"
#include "crypto/secure_channel.h"
#include "tests/crypto/aes_here.h"

namespace murmur::crypto {
namespace {

// libsodium's encryption of `m` with the Noise nonce 0^32 || le64(n) and no associated data.
Bytes Reference(const CipherKey& key, std::uint64_t n, ByteSpan m) {
  std::array<std::uint8_t, 12> nonce{};
  for (int i = 0; i < 8; ++i)
    nonce[4 + static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(n >> (8 * i));
  Bytes c(m.size() + kTagSize);
  unsigned long long clen = 0;
  crypto_aead_chacha20poly1305_ietf_encrypt(c.data(), &clen, m.data(), m.size(), nullptr, 0, nullptr,
                                            nonce.data(), key.data());
  return c;
}

Bytes Random(std::size_t n) {
  Bytes b(n);
  if (n > 0) randombytes_buf(b.data(), b.size());
  return b;
}

TEST_CASE("SealGather equals libsodium's AEAD for every way of cutting the plaintext") {
  EnsureSodium();
  CipherKey key;
  randombytes_buf(key.data(), key.size());
  const std::vector<std::size_t> sizes = {0, 1, 13, 15, 16, 17, 63, 64, 65, 127, 128, 1000, 65519};
  const std::vector<std::uint64_t> nonces = {
      0, 1, 255, 256, (std::uint64_t{1} << 32) + 5, ~std::uint64_t{0} - 1};
  for (std::size_t size : sizes) {
    for (std::uint64_t n : nonces) {
      const Bytes m = Random(size);
      const Bytes expected = Reference(key, n, m);
      // Cut points: none, a record header (1 and 13 bytes), a block edge, and three pieces.
      const std::vector<std::vector<std::size_t>> cuts = {{}, {1}, {13}, {64}, {13, 77}, {5, 64, 200}};
      for (const auto& cut : cuts) {
        CAPTURE(size);
        CAPTURE(n);
        CAPTURE(cut.size());
        std::vector<ByteSpan> parts;
        std::size_t at = 0;
        for (std::size_t c : cut) {
          if (c > size || c < at) continue;
          parts.push_back(ByteSpan(m).subspan(at, c - at));
          at = c;
        }
        parts.push_back(ByteSpan(m).subspan(at));
        Bytes out(size + kTagSize, 0xEE);
        AeadSlot(key, n).SealGather(parts, out.data());
        CHECK(out == expected);
      }
    }
  }
}

TEST_CASE("Verify accepts libsodium's ciphertexts, refuses every flipped bit, and Xor decrypts any range") {
  EnsureSodium();
  CipherKey key;
  randombytes_buf(key.data(), key.size());
  const std::uint64_t n = 77;
  const Bytes m = Random(1000);
  Bytes c = Reference(key, n, m);
  const AeadSlot slot(key, n);
  CHECK(slot.Verify(c));
  CHECK_FALSE(AeadSlot(key, n + 1).Verify(c));  // another nonce
  CHECK_FALSE(slot.Verify(ByteSpan(c).first(kTagSize - 1)));
  for (std::size_t bit = 0; bit < c.size() * 8; bit += 37) {
    CAPTURE(bit);
    c[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
    CHECK_FALSE(slot.Verify(c));
    c[bit / 8] ^= static_cast<std::uint8_t>(1u << (bit % 8));
  }
  const std::vector<std::pair<std::size_t, std::size_t>> ranges = {{0, 1000}, {0, 13},  {13, 987}, {63, 2},
                                                                   {64, 64},  {100, 0}, {999, 1},  {1, 999}};
  for (auto [offset, len] : ranges) {
    CAPTURE(offset);
    CAPTURE(len);
    Bytes out(len);
    slot.Xor(offset, c.data() + offset, len, out.data());
    CHECK(out == Bytes(m.begin() + static_cast<std::ptrdiff_t>(offset),
                       m.begin() + static_cast<std::ptrdiff_t>(offset + len)));
  }
  Bytes in_place(c.begin(), c.end() - kTagSize);  // dst == src
  slot.Xor(0, in_place.data(), in_place.size(), in_place.data());
  CHECK(in_place == m);
}

TEST_CASE("Slots taken from a channel interoperate with Seal and Open, across rekeys, and a bad tag closes") {
  CipherKey k1, k2;
  k1.fill(0x31);
  k2.fill(0x42);
  CipherState a_send, a_recv, b_send, b_recv;
  a_send.InitializeKey(k1);
  b_recv.InitializeKey(k1);
  b_send.InitializeKey(k2);
  a_recv.InitializeKey(k2);
  ChannelOptions o;
  o.rekey_interval = 3;
  SecureChannel a(a_send, a_recv, o), b(b_send, b_recv, o);
  for (std::uint8_t i = 0; i < 10; ++i) {
    CAPTURE(i);
    const Bytes m = Random(100 + i);
    // a seals with a slot; b opens with Open.
    auto slot = a.TakeSealSlot(m.size());
    REQUIRE(slot.ok());
    CHECK(slot->nonce == i);
    Bytes sealed(m.size() + kTagSize);
    const ByteSpan parts[] = {ByteSpan(m).first(1), ByteSpan(m).subspan(1)};
    slot->SealGather(parts, sealed.data());
    Bytes opened;
    REQUIRE(b.Open(sealed, &opened).ok());
    CHECK(opened == m);
    // b seals with Seal; a opens with VerifyNext and Xor.
    Bytes back;
    REQUIRE(b.Seal(m, &back).ok());
    auto rslot = a.VerifyNext(back);
    REQUIRE(rslot.ok());
    Bytes plain(m.size());
    rslot->Xor(0, back.data(), m.size(), plain.data());
    CHECK(plain == m);
  }
  CHECK(a.TakeSealSlot(o.max_plaintext + 1).status().code() == StatusCode::kInvalidArgument);
  Bytes sealed;
  REQUIRE(b.Seal(Random(10), &sealed).ok());
  sealed[3] ^= 1;
  CHECK(a.VerifyNext(sealed).status().code() == StatusCode::kUnauthenticated);
  CHECK(a.receive_closed());
  sealed[3] ^= 1;
  CHECK_FALSE(a.VerifyNext(sealed).ok());  // closed for good
}

TEST_CASE("Open slots taken ahead of verification open Seal's messages in order, and FailOpen closes") {
  CipherKey k;
  k.fill(0x77);
  CipherState send, recv, unused_send, unused_recv;
  send.InitializeKey(k);
  recv.InitializeKey(k);
  unused_send.InitializeKey(k);
  unused_recv.InitializeKey(k);
  ChannelOptions o;
  o.rekey_interval = 4;
  SecureChannel tx(send, unused_recv, o), rx(unused_send, recv, o);
  std::vector<Bytes> plain, sealed;
  for (int i = 0; i < 11; ++i) {
    plain.push_back(Random(50 + static_cast<std::size_t>(i)));
    sealed.emplace_back();
    REQUIRE(tx.Seal(plain.back(), &sealed.back()).ok());
  }
  std::vector<AeadSlot> slots;
  for (const Bytes& c : sealed) {
    auto slot = rx.TakeOpenSlot(c.size());
    REQUIRE(slot.ok());
    slots.push_back(*slot);
  }
  CHECK(rx.messages_received() == 11);
  for (std::size_t i = sealed.size(); i-- > 0;) {  // any order: each slot stands alone
    CAPTURE(i);
    REQUIRE(slots[i].Verify(sealed[i]));
    CHECK_FALSE(slots[(i + 1) % slots.size()].Verify(sealed[i]));
    Bytes m(plain[i].size());
    slots[i].Xor(0, sealed[i].data(), m.size(), m.data());
    CHECK(m == plain[i]);
  }
  CHECK(rx.TakeOpenSlot(kTagSize - 1).status().code() == StatusCode::kDataLoss);
  CHECK(rx.receive_closed());
  SecureChannel rx2(unused_send, recv, o);
  rx2.FailOpen();
  CHECK_FALSE(rx2.TakeOpenSlot(100).ok());
}

// libsodium's AES-256-GCM of `m` with the Noise nonce 0^32 || be64(n) and associated data `ad`.
Bytes AesReference(const CipherKey& key, std::uint64_t n, ByteSpan m, ByteSpan ad = {}) {
  std::array<std::uint8_t, 12> nonce{};
  for (int i = 0; i < 8; ++i)
    nonce[11 - static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(n >> (8 * i));
  Bytes c(m.size() + kTagSize);
  unsigned long long clen = 0;
  crypto_aead_aes256gcm_encrypt(c.data(), &clen, m.data(), m.size(), ad.data(), ad.size(), nullptr,
                                nonce.data(), key.data());
  return c;
}

using testing::AesGcmRunsHere;
using testing::LibsodiumAesRunsHere;

TEST_CASE("AESGCM: CipherState, in place and appending, equals libsodium with the big-endian nonce") {
  if (!LibsodiumAesRunsHere()) return;
  CipherKey key;
  randombytes_buf(key.data(), key.size());
  const Bytes ad = Random(64);
  for (std::size_t size : {0, 1, 15, 16, 17, 1000, 65519}) {
    for (std::uint64_t n :
         {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{256}, (std::uint64_t{1} << 40) + 3}) {
      CAPTURE(size);
      CAPTURE(n);
      const Bytes m = Random(size);
      const Bytes expected = AesReference(key, n, m, ad);
      CipherState enc(Cipher::kAesGcm), dec(Cipher::kAesGcm);
      enc.InitializeKey(key);
      dec.InitializeKey(key);
      enc.SetNonce(n);
      dec.SetNonce(n);
      Bytes c;
      REQUIRE(enc.EncryptWithAd(ad, m, &c).ok());
      CHECK(c == expected);
      Bytes p;
      REQUIRE(dec.DecryptWithAd(ad, c, &p).ok());
      CHECK(p == m);
      // In place: the same bytes, and back.
      Bytes buf = m;
      buf.resize(size + kTagSize);
      enc.SetNonce(n);
      REQUIRE(enc.EncryptInPlace(ad, buf).ok());
      CHECK(buf == expected);
      dec.SetNonce(n);
      REQUIRE(dec.DecryptInPlace(ad, buf).ok());
      CHECK(Bytes(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(size)) == m);
      // Another nonce or a flipped bit fails.
      dec.SetNonce(n + 1);
      Bytes none;
      CHECK(dec.DecryptWithAd(ad, c, &none).code() == StatusCode::kUnauthenticated);
      c[c.size() / 2] ^= 0x10;
      dec.SetNonce(n);
      CHECK(dec.DecryptWithAd(ad, c, &none).code() == StatusCode::kUnauthenticated);
    }
  }
}

TEST_CASE("AESGCM: Rekey is the first 32 bytes of ENCRYPT(k, 2^64-1, empty, zeros)") {
  if (!LibsodiumAesRunsHere()) return;
  CipherKey key;
  key.fill(0x5a);
  CipherState cs(Cipher::kAesGcm);
  cs.InitializeKey(key);
  cs.SetNonce(9);
  cs.Rekey();
  const Bytes zeros(32, 0);
  const Bytes c = AesReference(key, ~std::uint64_t{0}, zeros);
  CHECK(cs.key() == [&] {
    CipherKey k{};
    std::copy(c.begin(), c.begin() + 32, k.begin());
    return k;
  }());
  CHECK(cs.nonce() == 9);
  // ChaChaPoly's rekey of the same key differs (another cipher).
  CipherState other;
  other.InitializeKey(key);
  other.Rekey();
  CHECK(other.key() != cs.key());
}

TEST_CASE("AESGCM slots: SealGather equals libsodium for every cut, Open opens in place and refuses a flip") {
  if (!LibsodiumAesRunsHere()) return;
  CipherKey key;
  randombytes_buf(key.data(), key.size());
  for (std::size_t size : {0, 1, 13, 64, 1000, 65519}) {
    const Bytes m = Random(size);
    const std::uint64_t n = size * 7 + 1;
    const Bytes expected = AesReference(key, n, m);
    const AeadSlot slot(key, n, Cipher::kAesGcm);
    CHECK_FALSE(slot.RandomAccess());
    for (std::size_t cut : {std::size_t{0}, std::size_t{1}, std::size_t{13}, size}) {
      CAPTURE(size);
      CAPTURE(cut);
      if (cut > size) continue;
      const ByteSpan parts[] = {ByteSpan(m).first(cut), ByteSpan(m).subspan(cut)};
      Bytes out(size + kTagSize, 0xEE);
      slot.SealGather(parts, out.data());
      CHECK(out == expected);
      // Three parts, the middle one ending inside an AES block.
      if (size >= cut + 5) {
        const ByteSpan three[] = {ByteSpan(m).first(cut), ByteSpan(m).subspan(cut, 5),
                                  ByteSpan(m).subspan(cut + 5)};
        Bytes out3(size + kTagSize, 0xEE);
        slot.SealGather(three, out3.data());
        CHECK(out3 == expected);
      }
    }
    Bytes c = expected;
    REQUIRE(slot.Open(c));
    CHECK(Bytes(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(size)) == m);
    c = expected;
    c[c.size() - 1] ^= 0x01;
    CHECK_FALSE(slot.Open(c));
    c = expected;
    CHECK_FALSE(AeadSlot(key, n + 1, Cipher::kAesGcm).Open(c));
  }
  CHECK_FALSE(AeadSlot(key, 0, Cipher::kAesGcm).Open(std::span<std::uint8_t>()));
}

TEST_CASE(
    "AESGCM OpenStream: pieces cut anywhere, in place or not, give libsodium's plaintext and check its tag") {
  if (!LibsodiumAesRunsHere()) return;
  CipherKey key;
  randombytes_buf(key.data(), key.size());
  for (std::size_t size : {0, 1, 13, 17, 1000, 65519}) {
    const Bytes m = Random(size);
    const std::uint64_t n = size * 3 + 2;
    const Bytes c = AesReference(key, n, m);  // ciphertext || tag
    const auto nonce = NoiseNonce(n, Cipher::kAesGcm);
    const std::uint8_t* tag = c.data() + size;
    // Cut in three at a and b (inside AES blocks too); the middle piece in place.
    for (std::size_t a : {std::size_t{0}, std::size_t{1}, std::size_t{13}}) {
      for (std::size_t b : {a, a + 3, a + 16, size}) {
        if (b > size || a > size) continue;
        CAPTURE(size);
        CAPTURE(a);
        CAPTURE(b);
        Bytes work(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(size));
        Bytes out(size, 0xEE);
        aes_gcm::OpenStream stream(key, nonce);
        stream.Update(work.data(), a, out.data());
        stream.Update(work.data() + a, b - a, work.data() + a);
        std::copy(work.begin() + static_cast<std::ptrdiff_t>(a),
                  work.begin() + static_cast<std::ptrdiff_t>(b),
                  out.begin() + static_cast<std::ptrdiff_t>(a));
        stream.Update(work.data() + b, size - b, out.data() + b);
        CHECK(stream.Finish(tag));
        CHECK(out == m);
      }
    }
    // A flipped ciphertext bit, a flipped tag bit, another nonce: Finish says no.
    auto opens = [&](Bytes text, std::uint64_t nonce_n) {
      Bytes out(size);
      aes_gcm::OpenStream stream(key, NoiseNonce(nonce_n, Cipher::kAesGcm));
      stream.Update(text.data(), size, out.data());
      return stream.Finish(text.data() + size);
    };
    CHECK(opens(c, n));
    if (size > 0) {
      Bytes flipped = c;
      flipped[size / 2] ^= 0x10;
      CHECK_FALSE(opens(flipped, n));
    }
    Bytes bad_tag = c;
    bad_tag.back() ^= 0x01;
    CHECK_FALSE(opens(bad_tag, n));
    CHECK_FALSE(opens(c, n + 1));
  }
  // A stream dropped unfinished frees its thread's context for the next one.
  const Bytes m = Random(100);
  const Bytes c = AesReference(key, 5, m);
  { aes_gcm::OpenStream dropped(key, NoiseNonce(4, Cipher::kAesGcm)); }
  aes_gcm::OpenStream stream(key, NoiseNonce(5, Cipher::kAesGcm));
  Bytes out(m.size());
  stream.Update(c.data(), m.size(), out.data());
  CHECK(stream.Finish(c.data() + m.size()));
  CHECK(out == m);
}

TEST_CASE("AESGCM: keys alternating on a thread and slots on many threads at once give libsodium's bytes") {
  if (!LibsodiumAesRunsHere()) return;
  // Each thread caches one keyed context per direction (crypto/aes_gcm.h):
  // a message under another key must re-key it, and threads must not share it.
  std::vector<CipherKey> keys(3);
  for (CipherKey& k : keys) randombytes_buf(k.data(), k.size());
  const Bytes m = Random(3000);
  std::vector<Bytes> expected;
  for (std::size_t i = 0; i < 12; ++i) expected.push_back(AesReference(keys[i % 3], i, m));
  auto run = [&](std::size_t first, int* failures) {
    for (int round = 0; round < 50; ++round) {
      for (std::size_t j = 0; j < 12; ++j) {
        const std::size_t i = (first + j) % 12;
        const AeadSlot slot(keys[i % 3], i, Cipher::kAesGcm);
        Bytes out(m.size() + kTagSize);
        const ByteSpan part(m);
        slot.SealGather(std::span<const ByteSpan>(&part, 1), out.data());
        if (out != expected[i]) ++*failures;
        if (!slot.Open(out) || !std::equal(m.begin(), m.end(), out.begin())) ++*failures;
        // The other key's context must not open it.
        Bytes again = expected[i];
        if (AeadSlot(keys[(i + 1) % 3], i, Cipher::kAesGcm).Open(again)) ++*failures;
      }
    }
  };
  std::vector<int> failures(4, 0);
  std::vector<std::thread> threads;
  for (std::size_t t = 0; t < failures.size(); ++t) threads.emplace_back(run, t * 5, &failures[t]);
  for (std::thread& t : threads) t.join();
  for (int f : failures) CHECK(f == 0);
}

TEST_CASE(
    "AESGCM channel: slots interoperate with Seal and Open across rekeys, and OpenInPlace refuses a replay") {
  if (!AesGcmRunsHere()) return;
  CipherKey k1;
  k1.fill(0x31);
  CipherState send(Cipher::kAesGcm), recv(Cipher::kAesGcm), unused_send(Cipher::kAesGcm),
      unused_recv(Cipher::kAesGcm);
  for (CipherState* s : {&send, &recv, &unused_send, &unused_recv}) s->InitializeKey(k1);
  ChannelOptions o;
  o.rekey_interval = 3;
  SecureChannel tx(send, unused_recv, o), rx(unused_send, recv, o);
  CHECK(tx.cipher() == Cipher::kAesGcm);
  Bytes last;
  for (int i = 0; i < 10; ++i) {
    CAPTURE(i);
    const Bytes m = Random(100 + static_cast<std::size_t>(i));
    Bytes sealed(m.size() + kTagSize);
    if (i % 2 == 0) {
      auto slot = tx.TakeSealSlot(m.size());
      REQUIRE(slot.ok());
      CHECK(slot->cipher == Cipher::kAesGcm);
      const ByteSpan parts[] = {ByteSpan(m).first(1), ByteSpan(m).subspan(1)};
      slot->SealGather(parts, sealed.data());
    } else {
      sealed.clear();
      REQUIRE(tx.Seal(m, &sealed).ok());
    }
    if (i % 3 == 0) {
      Bytes opened;
      REQUIRE(rx.Open(sealed, &opened).ok());
      CHECK(opened == m);
    } else {
      std::span<std::uint8_t> plain;
      Bytes copy = sealed;
      REQUIRE(rx.OpenInPlace(copy, &plain).ok());
      CHECK(Bytes(plain.begin(), plain.end()) == m);
    }
    last = sealed;
  }
  std::span<std::uint8_t> plain;
  CHECK(rx.OpenInPlace(last, &plain).code() == StatusCode::kUnauthenticated);  // a replay
  CHECK(rx.receive_closed());
}

}  // namespace
}  // namespace murmur::crypto
