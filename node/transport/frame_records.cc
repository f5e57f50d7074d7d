#include "node/transport/frame_records.h"

#include <algorithm>
#include <string>

#include "core/check.h"

namespace murmur::node {

void FrameRecord::Read(std::size_t offset, std::size_t n, std::uint8_t* dst) {
  slot_.Xor(offset, ciphertext_.data() + offset, n, dst);
}

GcmFrameRecord::GcmFrameRecord(const crypto::AeadSlot& slot, std::span<std::uint8_t> frame)
    : stream_(slot.key, crypto::NoiseNonce(slot.nonce, crypto::Cipher::kAesGcm)),
      nonce_(slot.nonce),
      ciphertext_(frame.first(frame.size() - crypto::kTagSize)),
      tag_(frame.data() + ciphertext_.size()),
      head_size_(std::min(ciphertext_.size(), head_.size())) {
  stream_.Update(ciphertext_.data(), head_size_, head_.data());
  next_ = head_size_;
}

void GcmFrameRecord::Read(std::size_t offset, std::size_t n, std::uint8_t* dst) {
  if (offset < head_size_) {
    const std::size_t k = std::min(n, head_size_ - offset);
    std::copy_n(head_.data() + offset, k, dst);
    offset += k;
    dst += k;
    n -= k;
  }
  if (n == 0) return;
  MURMUR_CHECK(offset == next_);  // RecordSource's order
  stream_.Update(ciphertext_.data() + offset, n, dst);
  next_ += n;
}

Status GcmFrameRecord::Authenticate() {
  stream_.Update(ciphertext_.data() + next_, ciphertext_.size() - next_, ciphertext_.data() + next_);
  next_ = ciphertext_.size();
  if (stream_.Finish(tag_)) return Status::Ok();
  return Status::Unauthenticated("authentication failed at nonce " + std::to_string(nonce_) +
                                 " (tampered, replayed, reordered or wrong key)");
}

}  // namespace murmur::node
