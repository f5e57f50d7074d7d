// SecureHandshake: murmur's authenticated session set-up, a Noise XX
// handshake (crypto/handshake_state.h) whose payloads carry certificates.
//
//   prologue  = "murmur/noise-xx/v1" || u8 len(network id) || network id
//   message 1 = initiator -> responder: e                    payload = cipher offer (in the clear)
//   message 2 = responder -> initiator: e, ee, s, es          payload = responder's credentials (encrypted)
//   message 3 = initiator -> responder: s, se                 payload = initiator's credentials (encrypted)
//   credentials payload = u8 version 1 || u16 len(cert) || certificate || 64-byte signature
//   cipher offer = empty (ChaChaPoly only), or u8 version 1 || u8 count (1..8) || count cipher ids,
//                  the initiator's preference first (1 = ChaChaPoly, 2 = AESGCM)
//
// Cipher negotiation. The protocol name, hence the cipher, must be known
// before message 1 is hashed, but message 1 uses no cipher: the initiator
// runs message 1 under every cipher it offers (the same bytes), the
// responder picks the cipher from the offer (AESGCM when offered and it may
// run it, else ChaChaPoly) and answers under that protocol name, and the
// initiator takes the candidate under which message 2 authenticates. The
// offer is in h (message 1's payload is hashed) and the cipher is in h (the
// protocol name is its first value), and message 2's encrypted static key
// has h as its associated data, so an attacker who edits the offer, or
// makes the responder pick anything else, fails message 2 for every
// candidate: no downgrade. An initiator that offers only ChaChaPoly sends an
// empty payload, as murmur did before the offer existed.
//
// The Noise static key is an X25519 key, separate from the Ed25519 identity:
// the identity binds it by signing
//   "murmur/static-key/v1" || u8 len(network id) || network id || X25519 static public key
// and the certificate binds the identity to the network. XX's es/se DH proves
// possession of the X25519 secret; the signature ties it to the certified
// identity. Each side checks the peer's certificate against the coordinator
// key, network id, roles and clock, then the binding signature, when it reads
// the peer's payload. See docs/protocol.md ("Handshake") for the byte layout
// and for what a peer without a valid certificate can learn.
//
// Thread-safety: a SecureHandshake is used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "crypto/bytes.h"
#include "crypto/certificate.h"
#include "crypto/frame_codec.h"
#include "crypto/handshake_state.h"
#include "crypto/identity.h"
#include "crypto/secure_channel.h"

namespace murmur::crypto {

inline constexpr std::string_view kPrologueLabel = "murmur/noise-xx/v1";
inline constexpr std::string_view kStaticKeyLabel = "murmur/static-key/v1";
inline constexpr std::uint8_t kPayloadVersion = 1;
// The largest handshake message murmur sends: message 2 with the largest
// certificate (e 32, encrypted s 48, encrypted credentials 3 + 195 + 64 + 16).
inline constexpr std::uint32_t kMaxHandshakeMessageSize = 32 + 48 + (3 + kMaxCertificateSize + 64) + 16;
// Frame limits during a handshake (docs/protocol.md section 4): nothing
// longer is read, so an unauthenticated peer makes its receiver buffer
// at most this much.
inline constexpr FrameLimits kHandshakeFrameLimits{kMaxHandshakeMessageSize, 32};

// REQUIRES: a valid network id.
Bytes MakePrologue(std::string_view network_id);
// The bytes an identity signs to bind its Noise static key. REQUIRES: a valid network id.
Bytes StaticKeyBindingBytes(std::string_view network_id, const DhPublicKey& static_key);

// What one side presents: its identity, certificate and the signed static key.
struct Credentials {
  Identity identity;
  Certificate certificate;
  DhKeyPair static_key;
  Signature static_key_signature{};

  // Checks that the certificate names the identity's key and signs the static
  // key (a fresh one when not given) for the certificate's network.
  static Result<Credentials> Make(const Identity& identity, const Certificate& certificate,
                                  std::optional<DhKeyPair> static_key = std::nullopt);
};

// What a side accepts from its peer.
struct TrustPolicy {
  std::string network_id;
  SignPublicKey coordinator_key{};
  std::uint8_t required_roles = kRoleNode;  // every bit must be in the peer's certificate
  // AESGCM is offered (initiator) and picked (responder) only when this is
  // set and AesGcmAvailable(); ChaChaPoly is always offered and accepted.
  bool allow_aes_gcm = true;
};

inline constexpr std::uint8_t kCipherOfferVersion = 1;
inline constexpr std::size_t kMaxOfferedCiphers = 8;
// The ciphers an initiator with `policy` offers, its preference first.
std::vector<Cipher> OfferedCiphers(const TrustPolicy& policy);
// The payload of message 1 for `offer` (empty for ChaChaPoly alone).
Bytes EncodeCipherOffer(const std::vector<Cipher>& offer);
// The offer's ciphers murmur knows, in order (unknown ids are skipped);
// DataLoss or InvalidArgument when malformed.
Result<std::vector<Cipher>> DecodeCipherOffer(ByteSpan payload);
// The responder's pick from `offer`: AESGCM when offered and policy allows
// and the CPU runs it, else ChaChaPoly; InvalidArgument when not offered.
Result<Cipher> PickCipher(const std::vector<Cipher>& offer, const TrustPolicy& policy);

struct HandshakePayload {
  Certificate certificate;
  Signature static_key_signature{};
};
Bytes EncodeHandshakePayload(const HandshakePayload& payload);
// DataLoss (length) or InvalidArgument (version, certificate fields).
Result<HandshakePayload> DecodeHandshakePayload(ByteSpan bytes);

// The authenticated peer, known once the handshake completes.
struct PeerInfo {
  Certificate certificate;
  DhPublicKey static_key{};
  Hash handshake_hash{};                // the channel binding value
  Cipher cipher = Cipher::kChaChaPoly;  // negotiated for the session
};

class SecureHandshake {
 public:
  // `now` is Unix seconds for the certificate checks. REQUIRES: a valid policy.network_id.
  SecureHandshake(HandshakeRole role, const Credentials& credentials, TrustPolicy policy, std::int64_t now,
                  std::optional<DhKeyPair> ephemeral = std::nullopt);
  ~SecureHandshake();
  SecureHandshake(const SecureHandshake&) = delete;
  SecureHandshake& operator=(const SecureHandshake&) = delete;

  bool IsMyTurn() const {
    return !failed_ && (noise_ != nullptr ? noise_->IsMyTurn() : role_ == HandshakeRole::kInitiator);
  }
  bool IsComplete() const {
    return !failed_ && noise_ != nullptr && noise_->IsComplete() && peer_.has_value();
  }
  bool failed() const { return failed_; }

  // The next message to send (replaces *message). REQUIRES: IsMyTurn().
  Status WriteMessage(Bytes* message);
  // Reads the peer's next message and checks the peer's credentials when they
  // arrive. Unauthenticated (wrong network: the prologues differ, so the AEAD
  // fails; bad or forged certificate; expired; unsigned static key),
  // PermissionDenied (certificate for another network, missing role),
  // DataLoss/InvalidArgument (malformed). Any error ends the handshake.
  Status ReadMessage(ByteSpan message);

  // REQUIRES: IsComplete().
  PeerInfo peer() const;
  // The transport channel for this side (send and receive states from Split()). REQUIRES: IsComplete().
  SecureChannel MakeChannel(ChannelOptions options = {}) const;

 private:
  Status CheckPeerPayload(ByteSpan payload);
  Status ReadMessage1(ByteSpan message, Bytes* payload);  // the responder picks the cipher
  Status Fail(Status s);

  Credentials credentials_;
  TrustPolicy policy_;
  std::int64_t now_;
  HandshakeRole role_;
  DhKeyPair ephemeral_;
  Bytes offer_;  // message 1's payload
  // The handshake: the initiator's first offered cipher until message 2
  // picks among the candidates; the responder's from message 1 on.
  std::unique_ptr<HandshakeState> noise_;
  std::vector<std::unique_ptr<HandshakeState>> candidates_;  // the initiator's other offered ciphers
  std::optional<PeerInfo> peer_;                             // set once the peer's credentials check out
  bool failed_ = false;
};

}  // namespace murmur::crypto
