#include "crypto/frame_codec.h"

#include <algorithm>

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

FrameDecoder::FrameDecoder(FrameLimits limits) : limits_(limits) {
  MURMUR_CHECK(limits_.min_frame_size <= limits_.max_frame_size);
}

Status FrameDecoder::Feed(ByteSpan bytes, std::vector<Bytes>* frames) {
  if (failed_) return Status::FailedPrecondition("frame decoder failed earlier; close the stream");
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
    }
  }
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

}  // namespace murmur::crypto
