// The envelope reader's sources (node/transport/envelope.h, RecordSource)
// for a session's sealed frames, each decrypted from the receive buffer
// straight into wherever the reader wants its bytes (the message being
// reassembled), so that each received byte is written once:
//   - FrameRecord: a ChaCha20-Poly1305 frame whose tag has been verified
//     (SecureChannel::VerifyNext), read at any offset (AeadSlot::Xor);
//   - GcmFrameRecord: an AES-256-GCM frame, decrypted in RecordSource's
//     order as it is read, its tag checked at Authenticate.
//
// Thread-safety: one thread at a time, within the call that made it (a
// record points into the receive buffer; GcmFrameRecord holds its thread's
// AES-GCM stream until Authenticate).
#pragma once

#include <array>
#include <cstdint>
#include <span>

#include "crypto/aead_parts.h"
#include "crypto/aes_gcm.h"
#include "node/transport/envelope.h"

namespace murmur::node {

// A verified frame's record. REQUIRES: slot.RandomAccess(), and the slot
// outlives the record.
class FrameRecord : public RecordSource {
 public:
  FrameRecord(const crypto::AeadSlot& slot, crypto::ByteSpan ciphertext)
      : slot_(slot), ciphertext_(ciphertext) {}
  std::size_t size() const override { return ciphertext_.size(); }
  void Read(std::size_t offset, std::size_t n, std::uint8_t* dst) override;

 private:
  const crypto::AeadSlot& slot_;
  crypto::ByteSpan ciphertext_;
};

// An AES-GCM frame's record, decrypted as the envelope reader reads it, in
// RecordSource's order: its header into a small buffer when made (read there
// as often as asked), its data straight into the message being reassembled,
// and whatever the reader skipped, in place, at Authenticate, which then
// checks the tag. GCM's tag covers the whole ciphertext, so this is the one
// way to open a frame in one pass with no copy of its plaintext; the price
// is that the reader sees the record before it is authenticated, which
// Session::OnRecord allows for (it acts on nothing before Authenticate).
class GcmFrameRecord : public RecordSource {
 public:
  // `frame` is the ciphertext and tag, decrypted in place where the reader
  // skips. REQUIRES: frame.size() >= kTagSize (SecureChannel::TakeOpenSlot checks it).
  GcmFrameRecord(const crypto::AeadSlot& slot, std::span<std::uint8_t> frame);
  std::size_t size() const override { return ciphertext_.size(); }
  void Read(std::size_t offset, std::size_t n, std::uint8_t* dst) override;
  // Unauthenticated when the tag does not verify. Once.
  Status Authenticate() override;

 private:
  crypto::aes_gcm::OpenStream stream_;
  std::uint64_t nonce_;
  std::span<std::uint8_t> ciphertext_;
  const std::uint8_t* tag_;
  std::array<std::uint8_t, kBeginHeaderSize> head_{};
  const std::size_t head_size_;
  std::size_t next_ = 0;  // the next byte the stream decrypts
};

}  // namespace murmur::node
