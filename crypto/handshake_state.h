// HandshakeState: the Noise XX handshake, Noise_XX_25519_ChaChaPoly_BLAKE2b or
// Noise_XX_25519_AESGCM_BLAKE2b (Noise revision 34, sections 5.3 and 7.5):
//
//   XX:
//     -> e
//     <- e, ee, s, es
//     -> s, se
//
// DH is X25519 (crypto_scalarmult; a result of all zeros, from a low-order
// peer key, is refused). Keys are injectable: the static key always, the
// ephemeral key optionally, so the handshake can be replayed against the
// published test vectors. This class knows nothing of certificates; see
// crypto/handshake.h for murmur's use of the payloads.
//
// Every message is at most 65535 bytes (section 3). After any failure the
// state refuses further use (FailedPrecondition): the session must be dropped.
//
// Thread-safety: a value used by one thread at a time.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>

#include "core/status.h"
#include "crypto/bytes.h"
#include "crypto/cipher_state.h"
#include "crypto/symmetric_state.h"

namespace murmur::crypto {

inline constexpr std::size_t kDhSize = 32;
inline constexpr std::size_t kMaxNoiseMessage = 65535;
inline constexpr std::string_view kNoiseProtocolName = "Noise_XX_25519_ChaChaPoly_BLAKE2b";
inline constexpr std::string_view kNoiseProtocolNameAesGcm = "Noise_XX_25519_AESGCM_BLAKE2b";

// The protocol name of XX over X25519 and BLAKE2b with `cipher`.
std::string_view NoiseProtocolName(Cipher cipher);

using DhPublicKey = std::array<std::uint8_t, kDhSize>;

struct DhKeyPair {
  DhPublicKey public_key{};
  std::array<std::uint8_t, kDhSize> secret_key{};

  // A fresh X25519 key pair from the system's randomness.
  static DhKeyPair Generate();
  // The key pair of a given secret (the public key is X25519(secret, 9)).
  static DhKeyPair FromSecret(const std::array<std::uint8_t, kDhSize>& secret);
};

enum class HandshakeRole { kInitiator, kResponder };

class HandshakeState {
 public:
  // Initialize(XX, role, prologue, s, e) of NoiseProtocolName(cipher).
  // `ephemeral` is generated when not given. REQUIRES: AesGcmAvailable() for AESGCM.
  HandshakeState(HandshakeRole role, ByteSpan prologue, const DhKeyPair& static_key,
                 std::optional<DhKeyPair> ephemeral = std::nullopt, Cipher cipher = Cipher::kChaChaPoly);
  ~HandshakeState();
  HandshakeState(const HandshakeState&) = delete;
  HandshakeState& operator=(const HandshakeState&) = delete;

  // Writes the next handshake message carrying `payload` into *message (replaced).
  // REQUIRES (else FailedPrecondition): IsMyTurn(). InvalidArgument when the message would exceed 65535
  // bytes.
  Status WriteMessage(ByteSpan payload, Bytes* message);
  // Reads the peer's next handshake message; its payload goes to *payload (replaced).
  // DataLoss (wrong length), Unauthenticated (bad tag, low-order key), FailedPrecondition (not our turn).
  Status ReadMessage(ByteSpan message, Bytes* payload);

  HandshakeRole role() const { return role_; }
  Cipher cipher() const { return cipher_; }
  bool IsComplete() const { return step_ == 3 && !failed_; }
  bool IsMyTurn() const;
  // Handshake messages written or read so far, 0..3.
  int messages_done() const { return step_; }
  // The handshake hash h; after completion it is the channel binding value.
  const Hash& handshake_hash() const { return symmetric_.handshake_hash(); }
  // The peer's static key, once received (message 2 for the initiator, 3 for the responder).
  const std::optional<DhPublicKey>& remote_static() const { return rs_; }

  // Split(): (initiator -> responder, responder -> initiator). REQUIRES: IsComplete().
  std::pair<CipherState, CipherState> Split() const;
  // The same pair ordered for this side: (send, receive). REQUIRES: IsComplete().
  std::pair<CipherState, CipherState> SplitForRole() const;

 private:
  Status Dh(const DhKeyPair& local, const DhPublicKey& remote, std::array<std::uint8_t, kDhSize>* out) const;
  Status MixDh(const DhKeyPair& local, const DhPublicKey& remote);
  Status Fail(Status s);

  HandshakeRole role_;
  Cipher cipher_;
  SymmetricState symmetric_;
  DhKeyPair s_;
  DhKeyPair e_;
  std::optional<DhPublicKey> re_;
  std::optional<DhPublicKey> rs_;
  int step_ = 0;  // messages processed so far, 0..3
  bool failed_ = false;
};

}  // namespace murmur::crypto
