#include "crypto/handshake.h"

#include <sodium.h>

#include <algorithm>
#include <utility>

namespace murmur::crypto {
namespace {

// Whether this side may use AES-256-GCM: its policy allows it and the CPU runs it.
bool MayRunAesGcm(const TrustPolicy& policy) { return policy.allow_aes_gcm && AesGcmAvailable(); }

void AppendLabelAndNetwork(Bytes* out, std::string_view label, std::string_view network_id) {
  MURMUR_CHECK(ValidateNetworkId(network_id).ok());
  AppendBytes(out, AsBytes(label));
  AppendU8(out, static_cast<std::uint8_t>(network_id.size()));
  AppendBytes(out, AsBytes(network_id));
}

}  // namespace

Bytes MakePrologue(std::string_view network_id) {
  Bytes out;
  AppendLabelAndNetwork(&out, kPrologueLabel, network_id);
  return out;
}

Bytes StaticKeyBindingBytes(std::string_view network_id, const DhPublicKey& static_key) {
  Bytes out;
  AppendLabelAndNetwork(&out, kStaticKeyLabel, network_id);
  AppendBytes(&out, static_key);
  return out;
}

Result<Credentials> Credentials::Make(const Identity& identity, const Certificate& certificate,
                                      std::optional<DhKeyPair> static_key) {
  if (certificate.node_key != identity.public_key())
    return Status::InvalidArgument("certificate is for node key " + ToHex(certificate.node_key) +
                                   ", not this identity's " + identity.PublicKeyHex());
  MURMUR_RETURN_IF_ERROR(ValidateNetworkId(certificate.network_id).WithContext("certificate"));
  Credentials c{identity, certificate, static_key ? *static_key : DhKeyPair::Generate(), {}};
  c.static_key_signature =
      identity.Sign(StaticKeyBindingBytes(certificate.network_id, c.static_key.public_key));
  return c;
}

Bytes EncodeHandshakePayload(const HandshakePayload& payload) {
  Bytes cert = EncodeCertificate(payload.certificate);
  Bytes out;
  AppendU8(&out, kPayloadVersion);
  AppendU16(&out, static_cast<std::uint16_t>(cert.size()));
  AppendBytes(&out, cert);
  AppendBytes(&out, payload.static_key_signature);
  return out;
}

Result<HandshakePayload> DecodeHandshakePayload(ByteSpan bytes) {
  ByteReader r(bytes);
  std::uint8_t version = 0;
  std::uint16_t cert_len = 0;
  if (!r.ReadU8(&version) || !r.ReadU16(&cert_len))
    return Status::DataLoss("handshake payload truncated: " + std::to_string(bytes.size()) + " bytes");
  if (version != kPayloadVersion)
    return Status::InvalidArgument("handshake payload version " + std::to_string(version) +
                                   " is not supported");
  if (cert_len > kMaxCertificateSize)
    return Status::DataLoss("certificate length " + std::to_string(cert_len) + " over limit " +
                            std::to_string(kMaxCertificateSize));
  if (r.remaining() != static_cast<std::size_t>(cert_len) + kSignatureSize)
    return Status::DataLoss("handshake payload of " + std::to_string(bytes.size()) +
                            " bytes does not match its certificate length " + std::to_string(cert_len));
  ByteSpan cert_bytes;
  HandshakePayload p;
  MURMUR_CHECK(r.ReadSpan(cert_len, &cert_bytes) && r.ReadArray(&p.static_key_signature));
  MURMUR_ASSIGN_OR_RETURN(p.certificate, DecodeCertificate(cert_bytes));
  return p;
}

std::vector<Cipher> OfferedCiphers(const TrustPolicy& policy) {
  if (MayRunAesGcm(policy)) return {Cipher::kAesGcm, Cipher::kChaChaPoly};
  return {Cipher::kChaChaPoly};
}

Bytes EncodeCipherOffer(const std::vector<Cipher>& offer) {
  MURMUR_CHECK(!offer.empty() && offer.size() <= kMaxOfferedCiphers);
  if (offer == std::vector<Cipher>{Cipher::kChaChaPoly}) return {};
  Bytes out;
  AppendU8(&out, kCipherOfferVersion);
  AppendU8(&out, static_cast<std::uint8_t>(offer.size()));
  for (Cipher c : offer) AppendU8(&out, static_cast<std::uint8_t>(c));
  return out;
}

Result<std::vector<Cipher>> DecodeCipherOffer(ByteSpan payload) {
  if (payload.empty()) return std::vector<Cipher>{Cipher::kChaChaPoly};
  ByteReader r(payload);
  std::uint8_t version = 0, count = 0;
  if (!r.ReadU8(&version) || !r.ReadU8(&count))
    return Status::DataLoss("cipher offer truncated: " + std::to_string(payload.size()) + " bytes");
  if (version != kCipherOfferVersion)
    return Status::InvalidArgument("cipher offer version " + std::to_string(version) + " is not supported");
  if (count < 1 || count > kMaxOfferedCiphers)
    return Status::InvalidArgument("cipher offer of " + std::to_string(count) + " ciphers, not 1 to " +
                                   std::to_string(kMaxOfferedCiphers));
  if (r.remaining() != count)
    return Status::DataLoss("cipher offer of " + std::to_string(payload.size()) +
                            " bytes does not match its count " + std::to_string(count));
  std::vector<Cipher> known;
  for (std::uint8_t i = 0; i < count; ++i) {
    std::uint8_t id = 0;
    MURMUR_CHECK(r.ReadU8(&id));
    if (id == static_cast<std::uint8_t>(Cipher::kChaChaPoly) ||
        id == static_cast<std::uint8_t>(Cipher::kAesGcm))
      known.push_back(static_cast<Cipher>(id));
  }
  return known;
}

Result<Cipher> PickCipher(const std::vector<Cipher>& offer, const TrustPolicy& policy) {
  auto offered = [&](Cipher c) { return std::find(offer.begin(), offer.end(), c) != offer.end(); };
  if (offered(Cipher::kAesGcm) && MayRunAesGcm(policy)) return Cipher::kAesGcm;
  if (offered(Cipher::kChaChaPoly)) return Cipher::kChaChaPoly;
  return Status::InvalidArgument(
      "the initiator offers no cipher in common (murmur always accepts ChaChaPoly)");
}

SecureHandshake::SecureHandshake(HandshakeRole role, const Credentials& credentials, TrustPolicy policy,
                                 std::int64_t now, std::optional<DhKeyPair> ephemeral)
    : credentials_(credentials),
      policy_(std::move(policy)),
      now_(now),
      role_(role),
      ephemeral_(ephemeral ? *ephemeral : DhKeyPair::Generate()) {
  if (role != HandshakeRole::kInitiator) return;  // the cipher comes with message 1
  const std::vector<Cipher> offer = OfferedCiphers(policy_);
  offer_ = EncodeCipherOffer(offer);
  const Bytes prologue = MakePrologue(policy_.network_id);
  for (Cipher c : offer) {
    auto state = std::make_unique<HandshakeState>(role, prologue, credentials_.static_key, ephemeral_, c);
    if (noise_ == nullptr) {
      noise_ = std::move(state);
    } else {
      candidates_.push_back(std::move(state));
    }
  }
}

SecureHandshake::~SecureHandshake() {
  sodium_memzero(ephemeral_.secret_key.data(), ephemeral_.secret_key.size());
}

Status SecureHandshake::Fail(Status s) {
  if (!s.ok()) failed_ = true;
  return s;
}

Status SecureHandshake::WriteMessage(Bytes* message) {
  if (failed_) return Status::FailedPrecondition("handshake already failed");
  if (noise_ == nullptr) return Status::FailedPrecondition("handshake: not this side's turn to write");
  // Message 1 travels in the clear and carries the cipher offer; 2 and 3 carry our credentials.
  if (noise_->messages_done() == 0) {
    MURMUR_RETURN_IF_ERROR(Fail(noise_->WriteMessage(offer_, message)));
    for (auto& candidate : candidates_) {  // the same bytes under each offered protocol name
      Bytes same;
      MURMUR_CHECK(candidate->WriteMessage(offer_, &same).ok() && same == *message);
    }
    return Status::Ok();
  }
  return Fail(noise_->WriteMessage(
      EncodeHandshakePayload({credentials_.certificate, credentials_.static_key_signature}), message));
}

Status SecureHandshake::ReadMessage1(ByteSpan message, Bytes* payload) {
  if (message.size() < kDhSize)
    return Status::DataLoss("handshake message 1 truncated: " + std::to_string(message.size()) + " bytes");
  Result<std::vector<Cipher>> offer = DecodeCipherOffer(message.subspan(kDhSize));
  if (!offer.ok()) return offer.status().WithContext("handshake message 1");
  MURMUR_ASSIGN_OR_RETURN(Cipher cipher, PickCipher(*offer, policy_));
  noise_ = std::make_unique<HandshakeState>(role_, MakePrologue(policy_.network_id), credentials_.static_key,
                                            ephemeral_, cipher);
  return noise_->ReadMessage(message, payload);
}

Status SecureHandshake::ReadMessage(ByteSpan message) {
  if (failed_) return Status::FailedPrecondition("handshake already failed");
  Bytes payload;
  if (noise_ == nullptr) {
    if (role_ == HandshakeRole::kInitiator)
      return Status::FailedPrecondition("handshake: not this side's turn");
    return Fail(ReadMessage1(message, &payload));
  }
  const std::size_t number = noise_->messages_done() + 1;
  Status st = noise_->ReadMessage(message, &payload);
  // Message 2 authenticates under the responder's pick only.
  for (auto& candidate : candidates_) {
    if (st.ok() || st.code() != StatusCode::kUnauthenticated) break;
    if (candidate->ReadMessage(message, &payload).ok()) {
      noise_ = std::move(candidate);
      st = Status::Ok();
    }
  }
  if (number == 2) candidates_.clear();
  if (!st.ok()) {
    // The first encrypted field fails to authenticate when the two sides
    // hashed different prologues: name the network, the likely cause.
    if (st.code() == StatusCode::kUnauthenticated)
      st = Status::Unauthenticated(
          "handshake message " + std::to_string(number) +
          " does not authenticate: the peer is not in network '" + policy_.network_id +
          "' (the network id is bound into the handshake), or the message was altered (" + st.message() +
          ")");
    return Fail(st);
  }
  return Fail(CheckPeerPayload(payload));
}

Status SecureHandshake::CheckPeerPayload(ByteSpan payload) {
  auto decoded = DecodeHandshakePayload(payload);
  if (!decoded.ok()) return decoded.status().WithContext("peer credentials");
  const Certificate& cert = decoded->certificate;
  MURMUR_RETURN_IF_ERROR(VerifyCertificate(cert, policy_.coordinator_key, policy_.network_id, now_));
  if (!cert.HasRoles(policy_.required_roles))
    return Status::PermissionDenied("peer certificate has roles " + RolesToString(cert.roles) + ", needs " +
                                    RolesToString(policy_.required_roles));
  MURMUR_CHECK(noise_->remote_static().has_value());
  const DhPublicKey& rs = *noise_->remote_static();
  if (!VerifySignature(cert.node_key, StaticKeyBindingBytes(policy_.network_id, rs),
                       decoded->static_key_signature))
    return Status::Unauthenticated("peer's Noise static key is not signed by its certified node key");
  peer_ = PeerInfo{cert, rs, {}, noise_->cipher()};
  return Status::Ok();
}

PeerInfo SecureHandshake::peer() const {
  MURMUR_CHECK(IsComplete());
  PeerInfo p = *peer_;
  p.handshake_hash = noise_->handshake_hash();
  return p;
}

SecureChannel SecureHandshake::MakeChannel(ChannelOptions options) const {
  MURMUR_CHECK(IsComplete());
  auto [send, receive] = noise_->SplitForRole();
  return SecureChannel(std::move(send), std::move(receive), options);
}

}  // namespace murmur::crypto
