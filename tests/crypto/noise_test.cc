// Noise primitives against outside truths: the published
// Noise_XX_25519_ChaChaPoly_BLAKE2b and Noise_XX_25519_AESGCM_BLAKE2b vectors
// (cacophony), HMAC-BLAKE2b values
// from CPython's hmac module, and the RFC 2104 construction written out here.
#include <doctest/doctest.h>

#include <sodium.h>

#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "crypto/handshake_state.h"
#include "crypto/hmac.h"
#include "tests/crypto/aes_here.h"

namespace murmur::crypto {
namespace {

Bytes Hex(const std::string& s) {
  if (s == "-") return {};
  auto b = FromHex(s);
  REQUIRE(b.ok());
  return *b;
}

template <std::size_t N>
std::array<std::uint8_t, N> HexArray(const std::string& s) {
  Bytes b = Hex(s);
  REQUIRE(b.size() == N);
  std::array<std::uint8_t, N> a{};
  std::copy(b.begin(), b.end(), a.begin());
  return a;
}

struct Vector {
  std::map<std::string, std::string> fields;
  std::vector<std::pair<Bytes, Bytes>> messages;  // (payload, ciphertext)
};

Vector LoadVector(Cipher cipher = Cipher::kChaChaPoly) {
  std::ifstream in(std::string(MURMUR_TESTDATA_DIR) +
                   (cipher == Cipher::kAesGcm ? "/crypto/noise_xx_25519_aesgcm_blake2b.txt"
                                              : "/crypto/noise_xx_25519_chachapoly_blake2b.txt"));
  REQUIRE(in.good());
  Vector v;
  std::string line;
  Bytes pending_payload;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string key, value;
    ls >> key >> value;
    if (key == "payload") {
      pending_payload = Hex(value);
    } else if (key == "ciphertext") {
      v.messages.emplace_back(pending_payload, Hex(value));
    } else {
      v.fields[key] = value;
    }
  }
  REQUIRE(v.messages.size() == 6);
  return v;
}

// The handshake and transport messages of the vector for `cipher`, byte for byte.
void CheckVector(Cipher cipher) {
  Vector v = LoadVector(cipher);
  CHECK(v.fields["protocol_name"] == std::string(NoiseProtocolName(cipher)));
  Bytes prologue = Hex(v.fields["init_prologue"]);
  HandshakeState init(HandshakeRole::kInitiator, prologue,
                      DhKeyPair::FromSecret(HexArray<32>(v.fields["init_static"])),
                      DhKeyPair::FromSecret(HexArray<32>(v.fields["init_ephemeral"])), cipher);
  HandshakeState resp(HandshakeRole::kResponder, Hex(v.fields["resp_prologue"]),
                      DhKeyPair::FromSecret(HexArray<32>(v.fields["resp_static"])),
                      DhKeyPair::FromSecret(HexArray<32>(v.fields["resp_ephemeral"])), cipher);
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    HandshakeState& writer = i % 2 == 0 ? init : resp;
    HandshakeState& reader = i % 2 == 0 ? resp : init;
    Bytes msg, payload;
    REQUIRE(writer.WriteMessage(v.messages[i].first, &msg).ok());
    CHECK(ToHex(msg) == ToHex(v.messages[i].second));
    REQUIRE(reader.ReadMessage(msg, &payload).ok());
    CHECK(payload == v.messages[i].first);
  }
  REQUIRE(init.IsComplete());
  REQUIRE(resp.IsComplete());
  // The entry's "handshake_hash" is the final h, after message 3 (the
  // channel binding both sides hold).
  CHECK(ToHex(init.handshake_hash()) == v.fields["handshake_hash"]);
  CHECK(ToHex(resp.handshake_hash()) == v.fields["handshake_hash"]);
  CHECK(*init.remote_static() == DhKeyPair::FromSecret(HexArray<32>(v.fields["resp_static"])).public_key);
  CHECK(*resp.remote_static() == DhKeyPair::FromSecret(HexArray<32>(v.fields["init_static"])).public_key);

  auto [init_send, init_recv] = init.SplitForRole();
  auto [resp_send, resp_recv] = resp.SplitForRole();
  for (int i = 3; i < 6; ++i) {
    CAPTURE(i);
    bool from_initiator = i % 2 == 0;
    CipherState& send = from_initiator ? init_send : resp_send;
    CipherState& recv = from_initiator ? resp_recv : init_recv;
    Bytes ct, pt;
    REQUIRE(send.EncryptWithAd({}, v.messages[i].first, &ct).ok());
    CHECK(ToHex(ct) == ToHex(v.messages[i].second));
    REQUIRE(recv.DecryptWithAd({}, ct, &pt).ok());
    CHECK(pt == v.messages[i].first);
  }
}

TEST_CASE("Noise_XX_25519_ChaChaPoly_BLAKE2b matches the cacophony test vector byte for byte") {
  CheckVector(Cipher::kChaChaPoly);
}

TEST_CASE("Noise_XX_25519_AESGCM_BLAKE2b matches the cacophony test vector byte for byte") {
  if (!testing::AesGcmRunsHere()) return;
  CheckVector(Cipher::kAesGcm);
  // Message 1 uses no cipher: it is the same in both vectors; the rest differ.
  Vector chacha = LoadVector(Cipher::kChaChaPoly), aes = LoadVector(Cipher::kAesGcm);
  CHECK(chacha.messages[0].second == aes.messages[0].second);
  for (int i = 1; i < 6; ++i) CHECK(chacha.messages[i].second != aes.messages[i].second);
}

TEST_CASE("the AESGCM nonce is big-endian, ChaChaPoly's little-endian, both after four zero bytes") {
  const std::uint64_t n = 0x0102030405060708;
  const std::array<std::uint8_t, 12> le{0, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1},
      be{0, 0, 0, 0, 1, 2, 3, 4, 5, 6, 7, 8};
  CHECK(NoiseNonce(n, Cipher::kChaChaPoly) == le);
  CHECK(NoiseNonce(n, Cipher::kAesGcm) == be);
  CHECK(NoiseNonce(n) == le);
}

TEST_CASE("the vector handshake fails when one byte of any message is flipped") {
  Vector v = LoadVector();
  for (int flip_msg = 1; flip_msg < 3; ++flip_msg) {
    CAPTURE(flip_msg);
    HandshakeState init(HandshakeRole::kInitiator, Hex(v.fields["init_prologue"]),
                        DhKeyPair::FromSecret(HexArray<32>(v.fields["init_static"])),
                        DhKeyPair::FromSecret(HexArray<32>(v.fields["init_ephemeral"])));
    HandshakeState resp(HandshakeRole::kResponder, Hex(v.fields["resp_prologue"]),
                        DhKeyPair::FromSecret(HexArray<32>(v.fields["resp_static"])),
                        DhKeyPair::FromSecret(HexArray<32>(v.fields["resp_ephemeral"])));
    bool failed = false;
    for (int i = 0; i < 3 && !failed; ++i) {
      HandshakeState& writer = i % 2 == 0 ? init : resp;
      HandshakeState& reader = i % 2 == 0 ? resp : init;
      Bytes msg, payload;
      REQUIRE(writer.WriteMessage(v.messages[i].first, &msg).ok());
      if (i == flip_msg) msg[msg.size() / 2] ^= 0x01;
      Status s = reader.ReadMessage(msg, &payload);
      if (i == flip_msg) {
        CHECK(s.code() == StatusCode::kUnauthenticated);
        failed = true;
        // A failed state refuses further use.
        CHECK(reader.ReadMessage(msg, &payload).code() == StatusCode::kFailedPrecondition);
      }
    }
    CHECK(failed);
  }
}

TEST_CASE("handshake messages of the wrong length or order are refused with a Status") {
  DhKeyPair s1 = DhKeyPair::FromSecret(HexArray<32>(std::string(64, '1')));
  DhKeyPair s2 = DhKeyPair::FromSecret(HexArray<32>(std::string(64, '2')));
  HandshakeState resp(HandshakeRole::kResponder, {}, s2);
  Bytes msg, payload;
  CHECK(resp.WriteMessage({}, &msg).code() == StatusCode::kFailedPrecondition);
  CHECK(resp.ReadMessage(Bytes(31, 0), &payload).code() == StatusCode::kDataLoss);
  HandshakeState resp2(HandshakeRole::kResponder, {}, s2);
  CHECK(resp2.ReadMessage(Bytes(70000, 0), &payload).code() == StatusCode::kDataLoss);
  // A low-order point (all zeros) as the initiator's ephemeral key: ee gives zero.
  HandshakeState init(HandshakeRole::kInitiator, {}, s1);
  HandshakeState resp3(HandshakeRole::kResponder, {}, s2);
  REQUIRE(resp3.ReadMessage(Bytes(32, 0), &payload).ok());
  CHECK(resp3.WriteMessage({}, &msg).code() == StatusCode::kUnauthenticated);
  // The initiator's message 2 parse: truncated after e.
  REQUIRE(init.WriteMessage({}, &msg).ok());
  CHECK(init.ReadMessage(Bytes(40, 7), &payload).code() != StatusCode::kOk);
}

TEST_CASE("HMAC-BLAKE2b equals CPython's hmac over hashlib.blake2b") {
  std::ifstream in(std::string(MURMUR_TESTDATA_DIR) + "/crypto/hmac_blake2b.txt");
  REQUIRE(in.good());
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string key, msg, mac;
    ls >> key >> msg >> mac;
    CAPTURE(n);
    CHECK(ToHex(HmacBlake2b(Hex(key), {Hex(msg)})) == mac);
    ++n;
  }
  CHECK(n == 5);
}

TEST_CASE("HMAC-BLAKE2b equals RFC 2104 written out with crypto_generichash, and is not keyed BLAKE2b") {
  Bytes key(64), msg(300);
  for (std::size_t i = 0; i < key.size(); ++i) key[i] = static_cast<std::uint8_t>(3 * i + 1);
  for (std::size_t i = 0; i < msg.size(); ++i) msg[i] = static_cast<std::uint8_t>(i ^ 0x5a);
  // H((K ^ opad) || H((K ^ ipad) || m)) with K zero-padded to the 128-byte block.
  Bytes inner_in(128, 0x36), outer_in(128, 0x5c);
  for (std::size_t i = 0; i < key.size(); ++i) {
    inner_in[i] ^= key[i];
    outer_in[i] ^= key[i];
  }
  inner_in.insert(inner_in.end(), msg.begin(), msg.end());
  Hash inner{};
  crypto_generichash(inner.data(), 64, inner_in.data(), inner_in.size(), nullptr, 0);
  outer_in.insert(outer_in.end(), inner.begin(), inner.end());
  Hash expected{};
  crypto_generichash(expected.data(), 64, outer_in.data(), outer_in.size(), nullptr, 0);
  CHECK(HmacBlake2b(key, {msg}) == expected);
  // Split message parts give the same MAC.
  CHECK(HmacBlake2b(key, {ByteSpan(msg).first(100), ByteSpan(msg).subspan(100)}) == expected);
  Hash keyed{};
  crypto_generichash(keyed.data(), 64, msg.data(), msg.size(), key.data(), key.size());
  CHECK(keyed != expected);
}

TEST_CASE("Noise HKDF outputs follow the chained HMAC definition") {
  Hash ck{};
  for (std::size_t i = 0; i < ck.size(); ++i) ck[i] = static_cast<std::uint8_t>(i);
  Bytes ikm = {1, 2, 3, 4, 5};
  Hash o1{}, o2{}, o3{};
  NoiseHkdf(ck, ikm, &o1, &o2, &o3);
  Hash temp = HmacBlake2b(ck, {ikm});
  const std::uint8_t one[1] = {1}, two[1] = {2}, three[1] = {3};
  CHECK(o1 == HmacBlake2b(temp, {one}));
  CHECK(o2 == HmacBlake2b(temp, {o1, two}));
  CHECK(o3 == HmacBlake2b(temp, {o2, three}));
}

TEST_CASE("CipherState nonce encoding, rekey and the reserved nonce") {
  CipherKey key{};
  for (std::size_t i = 0; i < key.size(); ++i) key[i] = static_cast<std::uint8_t>(0x80 + i);
  CipherState cs;
  cs.InitializeKey(key);
  cs.SetNonce(0x0102030405060708ULL);
  Bytes ct;
  const Bytes msg = {'h', 'i'};
  REQUIRE(cs.EncryptWithAd({}, msg, &ct).ok());
  // The same with libsodium directly and the nonce 00000000 || LE64(n).
  std::uint8_t nonce[12] = {0, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1};
  Bytes direct(msg.size() + 16);
  unsigned long long clen = 0;
  crypto_aead_chacha20poly1305_ietf_encrypt(direct.data(), &clen, msg.data(), msg.size(), nullptr, 0, nullptr,
                                            nonce, key.data());
  CHECK(ct == direct);
  CHECK(cs.nonce() == 0x0102030405060709ULL);

  // Rekey = first 32 bytes of ENCRYPT(k, 2^64-1, "", zeros).
  std::uint8_t max_nonce[12] = {0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  std::uint8_t zeros[32] = {};
  std::uint8_t rekeyed[48];
  crypto_aead_chacha20poly1305_ietf_encrypt(rekeyed, &clen, zeros, 32, nullptr, 0, nullptr, max_nonce,
                                            key.data());
  CipherKey new_key{};
  std::copy(rekeyed, rekeyed + 32, new_key.begin());
  CipherState a, b;
  a.InitializeKey(key);
  b.InitializeKey(new_key);
  a.Rekey();
  CHECK(a.nonce() == 0);
  Bytes ca, cb;
  REQUIRE(a.EncryptWithAd({}, msg, &ca).ok());
  REQUIRE(b.EncryptWithAd({}, msg, &cb).ok());
  CHECK(ca == cb);

  cs.SetNonce(kMaxNonce);
  Bytes out;
  CHECK(cs.EncryptWithAd({}, msg, &out).code() == StatusCode::kResourceExhausted);
  CHECK(out.empty());
}

}  // namespace
}  // namespace murmur::crypto
