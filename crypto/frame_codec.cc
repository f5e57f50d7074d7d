#include "crypto/frame_codec.h"

#include <algorithm>
#include <cstring>

namespace murmur::crypto {
namespace {
// The first reservation for a body; more is allocated only as bytes arrive.
constexpr std::size_t kInitialReserve = 64 * 1024;
}  // namespace

Status AppendFrame(ByteSpan payload, const FrameLimits& limits, Bytes* out) {
  if (payload.size() > limits.max_frame_size)
    return Status::InvalidArgument("frame of " + std::to_string(payload.size()) + " bytes over limit " +
                                   std::to_string(limits.max_frame_size));
  if (payload.size() < limits.min_frame_size)
    return Status::InvalidArgument("frame of " + std::to_string(payload.size()) + " bytes under minimum " +
                                   std::to_string(limits.min_frame_size));
  AppendU32(out, static_cast<std::uint32_t>(payload.size()));
  AppendBytes(out, payload);
  return Status::Ok();
}

std::size_t BeginFrame(Bytes* out) {
  const std::size_t start = out->size();
  out->resize(start + kFrameHeaderSize);
  return start;
}

Status EndFrame(Bytes* out, std::size_t start, const FrameLimits& limits) {
  MURMUR_CHECK(start + kFrameHeaderSize <= out->size());
  const std::size_t size = out->size() - start - kFrameHeaderSize;
  if (size > limits.max_frame_size || size < limits.min_frame_size) {
    out->resize(start);
    return Status::InvalidArgument("frame of " + std::to_string(size) + " bytes outside [" +
                                   std::to_string(limits.min_frame_size) + ", " +
                                   std::to_string(limits.max_frame_size) + "]");
  }
  for (std::size_t i = 0; i < kFrameHeaderSize; ++i)
    (*out)[start + i] = static_cast<std::uint8_t>(size >> (8 * i));
  return Status::Ok();
}

FrameDecoder::FrameDecoder(FrameLimits limits) : limits_(limits) {
  MURMUR_CHECK(limits_.min_frame_size <= limits_.max_frame_size);
}

Status FrameDecoder::Feed(ByteSpan bytes, std::vector<Bytes>* frames, std::size_t* consumed) {
  if (failed_) return Status::FailedPrecondition("frame decoder failed earlier; close the stream");
  const std::size_t given = bytes.size();
  if (consumed != nullptr) *consumed = 0;
  while (!bytes.empty()) {
    if (header_have_ < kFrameHeaderSize) {
      std::size_t take = std::min(kFrameHeaderSize - header_have_, bytes.size());
      std::copy(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(take), header_ + header_have_);
      header_have_ += take;
      bytes = bytes.subspan(take);
      if (header_have_ < kFrameHeaderSize) break;
      body_need_ = LoadU32(header_);
      if (body_need_ > limits_.max_frame_size) {
        failed_ = true;
        return Status::ResourceExhausted("frame length " + std::to_string(body_need_) + " over limit " +
                                         std::to_string(limits_.max_frame_size));
      }
      if (body_need_ < limits_.min_frame_size) {
        failed_ = true;
        return Status::DataLoss("frame length " + std::to_string(body_need_) + " under minimum " +
                                std::to_string(limits_.min_frame_size));
      }
      body_.clear();
      body_.reserve(std::min<std::size_t>(body_need_, kInitialReserve));
    }
    std::size_t take = std::min<std::size_t>(body_need_ - body_.size(), bytes.size());
    body_.insert(body_.end(), bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(take));
    bytes = bytes.subspan(take);
    if (body_.size() == body_need_) {
      frames->push_back(std::move(body_));
      body_ = Bytes();
      header_have_ = 0;
      body_need_ = 0;
      if (consumed != nullptr) break;
    }
  }
  if (consumed != nullptr) *consumed = given - bytes.size();
  return Status::Ok();
}

Status FrameDecoder::Finish() const {
  if (failed_) return Status::FailedPrecondition("frame decoder failed earlier");
  if (header_have_ == 0) return Status::Ok();
  if (header_have_ < kFrameHeaderSize)
    return Status::DataLoss("stream ended inside a frame header (" + std::to_string(header_have_) +
                            " of 4 bytes)");
  return Status::DataLoss("stream ended inside a frame: " + std::to_string(body_.size()) + " of " +
                          std::to_string(body_need_) + " body bytes");
}

FrameReader::FrameReader(FrameLimits limits, std::size_t capacity) : limits_(limits), buffer_(capacity) {
  MURMUR_CHECK(limits_.min_frame_size <= limits_.max_frame_size);
  MURMUR_CHECK(capacity >= kFrameHeaderSize + limits_.max_frame_size);
}

void FrameReader::Grow(FrameLimits limits, std::size_t capacity) {
  MURMUR_CHECK(limits.min_frame_size <= limits.max_frame_size);
  MURMUR_CHECK(capacity >= kFrameHeaderSize + limits.max_frame_size && capacity >= buffer_.size());
  limits_ = limits;
  buffer_.resize(capacity);
}

std::span<std::uint8_t> FrameReader::Space() {
  if (begin_ == end_) begin_ = end_ = 0;
  // Move the unfinished frame to the front only when a largest frame might not fit behind it.
  if (buffer_.size() - end_ < kFrameHeaderSize + limits_.max_frame_size && begin_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  MURMUR_CHECK(end_ < buffer_.size());
  return std::span<std::uint8_t>(buffer_).subspan(end_);
}

void FrameReader::Commit(std::size_t n) {
  MURMUR_CHECK(n <= buffer_.size() - end_);
  end_ += n;
}

Result<bool> FrameReader::Next(std::span<std::uint8_t>* frame) {
  if (failed_) return Status::FailedPrecondition("frame reader failed earlier; close the stream");
  if (end_ - begin_ < kFrameHeaderSize) return false;
  const std::uint32_t size = LoadU32(buffer_.data() + begin_);
  if (size > limits_.max_frame_size) {
    failed_ = true;
    return Status::ResourceExhausted("frame length " + std::to_string(size) + " over limit " +
                                     std::to_string(limits_.max_frame_size));
  }
  if (size < limits_.min_frame_size) {
    failed_ = true;
    return Status::DataLoss("frame length " + std::to_string(size) + " under minimum " +
                            std::to_string(limits_.min_frame_size));
  }
  if (end_ - begin_ < kFrameHeaderSize + size) return false;
  *frame = std::span<std::uint8_t>(buffer_).subspan(begin_ + kFrameHeaderSize, size);
  begin_ += kFrameHeaderSize + size;
  return true;
}

}  // namespace murmur::crypto
