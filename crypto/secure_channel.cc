#include "crypto/secure_channel.h"

#include <utility>

namespace murmur::crypto {

SecureChannel::SecureChannel(CipherState send, CipherState receive, ChannelOptions options)
    : send_(std::move(send)), receive_(std::move(receive)), options_(options) {
  MURMUR_CHECK(send_.HasKey() && receive_.HasKey());
  MURMUR_CHECK(options_.rekey_interval >= 1);
  MURMUR_CHECK(options_.max_messages < kMaxNonce);
  MURMUR_CHECK(send_.cipher() == receive_.cipher());
}

Status SecureChannel::CheckSeal(std::size_t size) const {
  if (size > options_.max_plaintext)
    return Status::InvalidArgument("message of " + std::to_string(size) + " bytes over limit " +
                                   std::to_string(options_.max_plaintext) + "; chunk it");
  if (sent_ >= options_.max_messages)
    return Status::ResourceExhausted("channel sent its limit of " + std::to_string(options_.max_messages) +
                                     " messages; start a new session");
  return Status::Ok();
}

void SecureChannel::CountSent() {
  ++sent_;
  if (sent_ % options_.rekey_interval == 0) send_.Rekey();
}

void SecureChannel::CountReceived() {
  ++received_;
  if (received_ % options_.rekey_interval == 0) receive_.Rekey();
}

Status SecureChannel::Seal(ByteSpan plaintext, Bytes* out) {
  MURMUR_RETURN_IF_ERROR(CheckSeal(plaintext.size()));
  MURMUR_RETURN_IF_ERROR(send_.EncryptWithAd({}, plaintext, out));
  CountSent();
  return Status::Ok();
}

Status SecureChannel::SealInPlace(Bytes* buffer, std::size_t offset) {
  MURMUR_CHECK(offset <= buffer->size());
  const std::size_t size = buffer->size() - offset;
  MURMUR_RETURN_IF_ERROR(CheckSeal(size));
  buffer->resize(buffer->size() + kTagSize);
  MURMUR_RETURN_IF_ERROR(send_.EncryptInPlace({}, std::span<std::uint8_t>(*buffer).subspan(offset)));
  CountSent();
  return Status::Ok();
}

Result<AeadSlot> SecureChannel::TakeSealSlot(std::size_t size) {
  MURMUR_RETURN_IF_ERROR(CheckSeal(size));
  // max_messages < kMaxNonce (constructor), so the nonce never reaches the Rekey value.
  AeadSlot slot(send_.key(), send_.nonce(), send_.cipher());
  send_.SetNonce(send_.nonce() + 1);
  CountSent();
  return slot;
}

Result<AeadSlot> SecureChannel::VerifyNext(ByteSpan message) {
  MURMUR_RETURN_IF_ERROR(CheckOpen(message.size()));
  AeadSlot slot(receive_.key(), receive_.nonce(), receive_.cipher());
  if (!slot.Verify(message)) {
    receive_closed_ = true;
    if (message.size() < kTagSize)
      return Status::DataLoss("ciphertext of " + std::to_string(message.size()) +
                              " bytes is shorter than the " + std::to_string(kTagSize) + "-byte tag");
    return Status::Unauthenticated("authentication failed at nonce " + std::to_string(slot.nonce) +
                                   " (tampered, replayed, reordered or wrong key)");
  }
  receive_.SetNonce(receive_.nonce() + 1);
  CountReceived();
  return slot;
}

Result<AeadSlot> SecureChannel::TakeOpenSlot(std::size_t size) {
  MURMUR_RETURN_IF_ERROR(CheckOpen(size));
  if (size < kTagSize) {
    receive_closed_ = true;
    return Status::DataLoss("ciphertext of " + std::to_string(size) + " bytes is shorter than the " +
                            std::to_string(kTagSize) + "-byte tag");
  }
  AeadSlot slot(receive_.key(), receive_.nonce(), receive_.cipher());
  receive_.SetNonce(receive_.nonce() + 1);
  CountReceived();
  return slot;
}

Status SecureChannel::OpenInPlace(std::span<std::uint8_t> message, std::span<std::uint8_t>* plaintext) {
  MURMUR_RETURN_IF_ERROR(CheckOpen(message.size()));
  Status s = receive_.DecryptInPlace({}, message);
  if (!s.ok()) {
    receive_closed_ = true;
    return s;
  }
  *plaintext = message.first(message.size() - kTagSize);
  CountReceived();
  return Status::Ok();
}

Status SecureChannel::CheckOpen(std::size_t size) {
  if (receive_closed_)
    return Status::FailedPrecondition("channel receive side closed after an earlier failure");
  if (received_ >= options_.max_messages) {
    receive_closed_ = true;
    return Status::ResourceExhausted("channel received its limit of " +
                                     std::to_string(options_.max_messages) + " messages");
  }
  if (size > options_.max_plaintext + kTagSize) {
    receive_closed_ = true;
    return Status::DataLoss("message of " + std::to_string(size) + " bytes over limit " +
                            std::to_string(options_.max_plaintext + kTagSize));
  }
  return Status::Ok();
}

Status SecureChannel::Open(ByteSpan ciphertext, Bytes* out) {
  MURMUR_RETURN_IF_ERROR(CheckOpen(ciphertext.size()));
  Status s = receive_.DecryptWithAd({}, ciphertext, out);
  if (!s.ok()) {
    receive_closed_ = true;
    return s;
  }
  CountReceived();
  return Status::Ok();
}

}  // namespace murmur::crypto
