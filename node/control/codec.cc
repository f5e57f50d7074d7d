#include "node/control/codec.h"

#include <algorithm>

#include "core/bytes.h"
#include "core/check.h"
#include "crypto/frame_codec.h"

namespace murmur::node {

Status SealControlMessage(crypto::ByteSpan message, crypto::SecureChannel& channel, crypto::Bytes* out) {
  if (message.size() > kMaxControlMessage)
    return Status::InvalidArgument("control message of " + std::to_string(message.size()) +
                                   " bytes is over the limit of " + std::to_string(kMaxControlMessage));
  crypto::Bytes whole;
  whole.reserve(4 + message.size());
  AppendLittleEndian(whole, static_cast<std::uint32_t>(message.size()));
  whole.insert(whole.end(), message.begin(), message.end());
  const std::size_t piece = channel.options().max_plaintext;
  crypto::Bytes sealed;
  for (std::size_t at = 0; at < whole.size(); at += piece) {
    sealed.clear();
    const std::size_t n = std::min(piece, whole.size() - at);
    MURMUR_RETURN_IF_ERROR(channel.Seal(crypto::ByteSpan(whole.data() + at, n), &sealed));
    MURMUR_RETURN_IF_ERROR(crypto::AppendFrame(sealed, crypto::kConnectionFrameLimits, out));
  }
  return Status::Ok();
}

Status ControlMessageAssembler::Add(crypto::ByteSpan plaintext) {
  std::size_t at = 0;
  while (!have_length_ && at < plaintext.size()) {
    header_[header_have_++] = plaintext[at++];
    if (header_have_ == 4) {
      length_ = ReadLittleEndian<std::uint32_t>(header_);
      if (length_ > kMaxControlMessage)
        return Status::ResourceExhausted("control message length " + std::to_string(length_) +
                                         " is over the limit of " + std::to_string(kMaxControlMessage));
      have_length_ = true;
    }
  }
  const std::size_t rest = plaintext.size() - at;
  if (rest > 0 && (!have_length_ || body_.size() + rest > length_))
    return Status::InvalidArgument("control message piece runs past the announced length");
  body_.insert(body_.end(), plaintext.begin() + static_cast<std::ptrdiff_t>(at), plaintext.end());
  return Status::Ok();
}

crypto::Bytes ControlMessageAssembler::Take() {
  MURMUR_CHECK(complete());
  crypto::Bytes out = std::move(body_);
  body_.clear();
  header_have_ = 0;
  have_length_ = false;
  length_ = 0;
  return out;
}

}  // namespace murmur::node
