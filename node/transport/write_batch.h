// WriteBatch: the bytes of one socket write, built where they will be sent.
//
// The buffer only grows (and is zero-filled only when it does), so a sealed
// frame is written straight into memory that is already there: a batch that
// is cleared and refilled costs no allocation and no fill. Offsets stay valid
// across Extend; pointers do not (the buffer may move), so code that seals
// into the batch later (crypto workers, node/transport/transport.h) keeps offsets.
//
// Thread-safety: a value; one thread at a time.
#pragma once

#include <cstdint>

#include "crypto/bytes.h"

namespace murmur::node {

class WriteBatch {
 public:
  void Clear() { size_ = 0; }
  // Adds `n` bytes (unspecified contents) at the end; returns their offset.
  std::size_t Extend(std::size_t n) {
    const std::size_t at = size_;
    size_ += n;
    if (size_ > buffer_.size()) buffer_.resize(size_);
    return at;
  }
  void Append(crypto::ByteSpan bytes) {
    const std::size_t at = Extend(bytes.size());
    if (!bytes.empty())
      std::copy(bytes.begin(), bytes.end(), buffer_.begin() + static_cast<std::ptrdiff_t>(at));
  }
  std::uint8_t* data() { return buffer_.data(); }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  crypto::Bytes buffer_;
  std::size_t size_ = 0;
};

}  // namespace murmur::node
