#include "crypto/handshake_state.h"

#include <sodium.h>

namespace murmur::crypto {

DhKeyPair DhKeyPair::Generate() {
  EnsureSodium();
  std::array<std::uint8_t, kDhSize> secret{};
  randombytes_buf(secret.data(), secret.size());
  DhKeyPair kp = FromSecret(secret);
  sodium_memzero(secret.data(), secret.size());
  return kp;
}

DhKeyPair DhKeyPair::FromSecret(const std::array<std::uint8_t, kDhSize>& secret) {
  EnsureSodium();
  DhKeyPair kp;
  kp.secret_key = secret;
  MURMUR_CHECK(crypto_scalarmult_base(kp.public_key.data(), kp.secret_key.data()) == 0);
  return kp;
}

std::string_view NoiseProtocolName(Cipher cipher) {
  return cipher == Cipher::kAesGcm ? kNoiseProtocolNameAesGcm : kNoiseProtocolName;
}

HandshakeState::HandshakeState(HandshakeRole role, ByteSpan prologue, const DhKeyPair& static_key,
                               std::optional<DhKeyPair> ephemeral, Cipher cipher)
    : role_(role),
      cipher_(cipher),
      symmetric_(NoiseProtocolName(cipher), cipher),
      s_(static_key),
      e_(ephemeral ? *ephemeral : DhKeyPair::Generate()) {
  symmetric_.MixHash(prologue);
}

HandshakeState::~HandshakeState() {
  sodium_memzero(s_.secret_key.data(), s_.secret_key.size());
  sodium_memzero(e_.secret_key.data(), e_.secret_key.size());
}

bool HandshakeState::IsMyTurn() const {
  if (failed_ || step_ >= 3) return false;
  // Messages 0 and 2 go initiator -> responder, message 1 the other way.
  bool initiator_sends = step_ % 2 == 0;
  return initiator_sends == (role_ == HandshakeRole::kInitiator);
}

Status HandshakeState::Fail(Status s) {
  failed_ = true;
  return s;
}

Status HandshakeState::Dh(const DhKeyPair& local, const DhPublicKey& remote,
                          std::array<std::uint8_t, kDhSize>* out) const {
  if (crypto_scalarmult(out->data(), local.secret_key.data(), remote.data()) != 0)
    return Status::Unauthenticated("peer sent a low-order X25519 public key");
  return Status::Ok();
}

Status HandshakeState::MixDh(const DhKeyPair& local, const DhPublicKey& remote) {
  std::array<std::uint8_t, kDhSize> shared{};
  Status s = Dh(local, remote, &shared);
  if (s.ok()) symmetric_.MixKey(shared);
  sodium_memzero(shared.data(), shared.size());
  return s;
}

Status HandshakeState::WriteMessage(ByteSpan payload, Bytes* message) {
  if (!IsMyTurn()) return Status::FailedPrecondition("handshake: not this side's turn to write");
  Bytes out;
  Status s;
  if (step_ == 0) {  // -> e
    AppendBytes(&out, e_.public_key);
    symmetric_.MixHash(e_.public_key);
  } else if (step_ == 1) {  // <- e, ee, s, es
    AppendBytes(&out, e_.public_key);
    symmetric_.MixHash(e_.public_key);
    s = MixDh(e_, *re_);                                             // ee
    if (s.ok()) s = symmetric_.EncryptAndHash(s_.public_key, &out);  // s
    if (s.ok()) s = MixDh(s_, *re_);                                 // es (responder: DH(s, re))
  } else {                                                           // -> s, se
    s = symmetric_.EncryptAndHash(s_.public_key, &out);              // s
    if (s.ok()) s = MixDh(s_, *re_);                                 // se (initiator: DH(s, re))
  }
  if (s.ok()) {
    if (out.size() + payload.size() + (symmetric_.HasKey() ? kTagSize : 0) > kMaxNoiseMessage)
      return Fail(Status::InvalidArgument("handshake payload of " + std::to_string(payload.size()) +
                                          " bytes makes the message exceed 65535 bytes"));
    s = symmetric_.EncryptAndHash(payload, &out);
  }
  if (!s.ok()) return Fail(s);
  *message = std::move(out);
  ++step_;
  return Status::Ok();
}

Status HandshakeState::ReadMessage(ByteSpan message, Bytes* payload) {
  if (failed_) return Status::FailedPrecondition("handshake already failed");
  if (step_ >= 3 || IsMyTurn()) return Status::FailedPrecondition("handshake: not this side's turn to read");
  if (message.size() > kMaxNoiseMessage)
    return Fail(
        Status::DataLoss("handshake message of " + std::to_string(message.size()) + " bytes exceeds 65535"));
  ByteReader r(message);
  Bytes plain;
  Status s;
  auto read_e = [&]() -> Status {
    DhPublicKey re{};
    if (!r.ReadArray(&re))
      return Status::DataLoss("handshake message " + std::to_string(step_ + 1) +
                              " truncated: " + std::to_string(message.size()) + " bytes");
    re_ = re;
    symmetric_.MixHash(re);
    return Status::Ok();
  };
  auto read_s = [&]() -> Status {
    ByteSpan enc;
    if (!r.ReadSpan(kDhSize + kTagSize, &enc))
      return Status::DataLoss("handshake message " + std::to_string(step_ + 1) +
                              " truncated: " + std::to_string(message.size()) + " bytes");
    Bytes rs;
    MURMUR_RETURN_IF_ERROR(symmetric_.DecryptAndHash(enc, &rs).WithContext("handshake: peer static key"));
    DhPublicKey key{};
    std::copy(rs.begin(), rs.end(), key.begin());
    rs_ = key;
    return Status::Ok();
  };
  if (step_ == 0) {  // responder reads: e
    s = read_e();
  } else if (step_ == 1) {  // initiator reads: e, ee, s, es
    s = read_e();
    if (s.ok()) s = MixDh(e_, *re_);  // ee
    if (s.ok()) s = read_s();
    if (s.ok()) s = MixDh(e_, *rs_);  // es (initiator: DH(e, rs))
  } else {                            // responder reads: s, se
    s = read_s();
    if (s.ok()) s = MixDh(e_, *rs_);  // se (responder: DH(e, rs))
  }
  if (s.ok()) {
    ByteSpan rest;
    MURMUR_CHECK(r.ReadSpan(r.remaining(), &rest));
    if (symmetric_.HasKey() && rest.size() < kTagSize)
      s = Status::DataLoss("handshake message " + std::to_string(step_ + 1) +
                           " truncated: payload shorter than its tag");
    else
      s = symmetric_.DecryptAndHash(rest, &plain).WithContext("handshake: payload");
  }
  if (!s.ok()) return Fail(s);
  *payload = std::move(plain);
  ++step_;
  return Status::Ok();
}

std::pair<CipherState, CipherState> HandshakeState::Split() const {
  MURMUR_CHECK(IsComplete());
  return symmetric_.Split();
}

std::pair<CipherState, CipherState> HandshakeState::SplitForRole() const {
  auto [c1, c2] = Split();
  if (role_ == HandshakeRole::kInitiator) return {c1, c2};
  return {c2, c1};
}

}  // namespace murmur::crypto
