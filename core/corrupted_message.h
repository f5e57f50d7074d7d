// CorruptedMessage and DecodingSink: damaged bytes, and the decoder that must
// reject them.
//
// A CorruptedMessage is the wire encoding of another message with bytes
// flipped and its tail cut (FaultyEnv makes them, core/faulty_env.h). It keeps
// the original kind, so a real transport (node::AsioEnv) sends the damaged
// bytes under that kind and the receiver's own decoder meets them, as it
// would meet the bytes of a buggy or malicious peer. The simulator moves
// message objects without encoding them; there a DecodingSink in front of the
// receiving node plays the receiver's decoder: it decodes a CorruptedMessage's
// bytes with the decoder of its kind and delivers only what decodes. Other
// messages pass through untouched.
//
// What catches what: damage on the wire, below the secure channel, fails the
// AEAD tag (docs/protocol.md) and closes the session; damage above it, before
// encryption, arrives authentic and only the message decoder can catch it.
// Cutting the tail is caught by any decoder that checks lengths exactly (the
// gossip decoder does); a flipped bit inside float values is not caught by
// any decoder, and DecodingSink then delivers the decoded message, garbage
// and all, as the real receiver would.
//
// Thread-safety: CorruptedMessage is immutable; a DecodingSink belongs to its
// node's executor.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/env.h"
#include "core/status.h"

namespace murmur {

class CorruptedMessage final : public Message {
 public:
  // Encodes `original`, XORs `flips` bytes at positions drawn from `rng` with
  // nonzero values, then cuts U{1..max_cut} trailing bytes (none when
  // max_cut is 0; never below one byte left).
  static std::shared_ptr<const CorruptedMessage> Make(const Message& original, Rng& rng, int flips,
                                                      std::size_t max_cut);

  std::uint32_t kind() const override { return kind_; }
  std::size_t EncodedSize() const override { return bytes_.size(); }
  void EncodeTo(std::vector<std::uint8_t>& out) const override {
    out.insert(out.end(), bytes_.begin(), bytes_.end());
  }
  std::span<const std::uint8_t> bytes() const { return bytes_; }

  CorruptedMessage(std::uint32_t kind, std::vector<std::uint8_t> bytes)
      : kind_(kind), bytes_(std::move(bytes)) {}

 private:
  std::uint32_t kind_;
  std::vector<std::uint8_t> bytes_;
};

// Decodes the payload of a message of `kind`, as the receiving transport would.
using WireDecoder =
    std::function<Result<MessagePtr>(std::uint32_t kind, std::span<const std::uint8_t> bytes)>;

class DecodingSink final : public MessageSink {
 public:
  // `target` is not owned and must outlive this sink.
  DecodingSink(MessageSink* target, WireDecoder decoder) : target_(target), decoder_(std::move(decoder)) {}

  void OnMessage(NodeId from, MessagePtr msg) override;

  std::uint64_t rejected() const { return rejected_; }  // corrupted messages the decoder refused
  std::uint64_t accepted() const { return accepted_; }  // corrupted messages that still decoded

 private:
  MessageSink* target_;
  WireDecoder decoder_;
  std::uint64_t rejected_ = 0;
  std::uint64_t accepted_ = 0;
};

}  // namespace murmur
