// SecureChannel: the transport phase of a Noise session (revision 34,
// section 5, "Split" and section 11.3 "Rekey").
//
// Each direction has its own CipherState from Split(). A transport message is
// ENCRYPT(k, n, empty ad, plaintext): plaintext plus a 16-byte tag, with the
// implicit nonce n counting the messages of that direction from 0. Frames
// travel over an ordered stream (TCP), so the receiver always knows the next
// n: a replayed, reordered, dropped or modified frame fails authentication.
// After one failure the receive side is closed for good (the session must be
// torn down), so an attacker gets a single guess per connection.
//
// Rekey: both sides call Rekey() on a direction's CipherState after every
// `rekey_interval` messages of that direction (after message number
// rekey_interval - 1, 2*rekey_interval - 1, ...). The nonce keeps counting.
// Sending stops with ResourceExhausted at `max_messages` per direction, far
// below 2^64-1.
//
// Thread-safety: one thread at a time; Seal and Open touch different
// CipherStates, so one sender thread and one receiver thread may run together.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "crypto/aead_parts.h"
#include "crypto/bytes.h"
#include "crypto/cipher_state.h"

namespace murmur::crypto {

struct ChannelOptions {
  // Messages per direction between two Rekey() calls. Default 2^20.
  std::uint64_t rekey_interval = std::uint64_t{1} << 20;
  // Messages per direction after which Seal refuses (and Open fails). Default 2^62.
  std::uint64_t max_messages = std::uint64_t{1} << 62;
  // Largest plaintext of one message: 65535 - 16, so that every message is a
  // valid Noise transport message.
  std::size_t max_plaintext = 65535 - kTagSize;
};

class SecureChannel {
 public:
  // REQUIRES: both CipherStates have keys; options.rekey_interval >= 1.
  SecureChannel(CipherState send, CipherState receive, ChannelOptions options = {});

  // Appends the ciphertext of `plaintext` to *out. InvalidArgument over
  // max_plaintext; ResourceExhausted at max_messages.
  Status Seal(ByteSpan plaintext, Bytes* out);
  // Appends the plaintext of the next message to *out. Unauthenticated (and
  // the receive side closes) on a tampered, replayed or reordered message.
  Status Open(ByteSpan ciphertext, Bytes* out);

  // In place, for the transport's hot path. SealInPlace: (*buffer)[offset,
  // end) is the plaintext; it is encrypted where it lies and the tag
  // appended. OpenInPlace: `message` (a ciphertext and tag) is decrypted
  // where it lies and *plaintext set to its first size - 16 bytes. Same
  // limits and errors as Seal and Open.
  Status SealInPlace(Bytes* buffer, std::size_t offset);
  Status OpenInPlace(std::span<std::uint8_t> message, std::span<std::uint8_t>* plaintext);

  // In pieces (crypto/aead_parts.h), with no copy of the plaintext.
  // TakeSealSlot: the key and nonce with which Seal would encrypt the next
  // message, of `size` plaintext bytes; the message counts as sent (and the
  // key rekeys when due), so the caller must seal it with the slot
  // (AeadSlot::SealGather, on any thread) and put it on the wire in the
  // order the slots were taken. Same limits and errors as Seal.
  Result<AeadSlot> TakeSealSlot(std::size_t size);
  // VerifyNext: checks the tag of `message` (ciphertext || tag) with the next
  // receive nonce; on success the message counts as received and the slot
  // returned decrypts any of its bytes (AeadSlot::Xor). Same errors as Open
  // (Unauthenticated on a bad tag, and the receive side closes).
  // REQUIRES: cipher() is ChaChaPoly (AeadSlot::RandomAccess); else OpenInPlace.
  Result<AeadSlot> VerifyNext(ByteSpan message);
  // For opening several messages on several threads: the slot of the next
  // message, of `size` bytes (ciphertext and tag), which counts as received
  // before it is verified. The caller opens each with its slot
  // (AeadSlot::Open) and must call FailOpen at the first that fails, and
  // use none after it. Same limits and errors as Open, besides the tag.
  Result<AeadSlot> TakeOpenSlot(std::size_t size);
  // Closes the receive side for good (a message taken with TakeOpenSlot
  // failed authentication).
  void FailOpen() { receive_closed_ = true; }

  // The cipher of both directions (from the handshake).
  Cipher cipher() const { return send_.cipher(); }
  std::uint64_t messages_sent() const { return sent_; }
  std::uint64_t messages_received() const { return received_; }
  std::uint64_t rekeys_sent() const { return sent_ / options_.rekey_interval; }
  bool receive_closed() const { return receive_closed_; }
  const ChannelOptions& options() const { return options_; }

 private:
  // The checks shared by Open and OpenInPlace; closes the receive side on failure.
  Status CheckSeal(std::size_t size) const;  // the send-side limits of Seal and its variants
  void CountSent();                          // one more message sent; rekeys every rekey_interval
  void CountReceived();                      // the same on the receive side
  Status CheckOpen(std::size_t size);

  CipherState send_;
  CipherState receive_;
  ChannelOptions options_;
  std::uint64_t sent_ = 0;
  std::uint64_t received_ = 0;
  bool receive_closed_ = false;
};

}  // namespace murmur::crypto
