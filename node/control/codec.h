// The message layer of the operator's control protocol (docs/protocol.md,
// section 10): after the Noise XX handshake, one control message (a serialized
// ControlRequest or ControlResponse) is
//
//   u32 length (little-endian) || length bytes of protobuf
//
// cut into pieces of at most ChannelOptions::max_plaintext bytes, each sealed
// as one transport message in one frame. The length is checked against
// kMaxControlMessage as soon as its 4 bytes are in, before any allocation.
//
// Thread-safety: values used by one thread at a time.
#pragma once

#include <cstdint>

#include "core/status.h"
#include "crypto/bytes.h"
#include "crypto/secure_channel.h"

namespace murmur::node {

inline constexpr std::uint32_t kMaxControlMessage = 1u << 20;

// Appends the frames (length prefix included) carrying `message` to *out.
// InvalidArgument over kMaxControlMessage.
Status SealControlMessage(crypto::ByteSpan message, crypto::SecureChannel& channel, crypto::Bytes* out);

// Reassembles one control message from the plaintexts of successive frames.
class ControlMessageAssembler {
 public:
  // Adds one frame's plaintext. ResourceExhausted when the announced length is
  // over kMaxControlMessage; InvalidArgument when a piece runs past the message.
  Status Add(crypto::ByteSpan plaintext);
  bool complete() const { return have_length_ && body_.size() == length_; }
  // The message; resets the assembler for the next one. REQUIRES: complete().
  crypto::Bytes Take();

 private:
  std::uint8_t header_[4] = {};
  std::size_t header_have_ = 0;
  bool have_length_ = false;
  std::uint32_t length_ = 0;
  crypto::Bytes body_;
};

}  // namespace murmur::node
