// Length-prefixed frames over a byte stream (docs/protocol.md, "Frames").
//
//   frame = length (u32, little-endian) || body (length bytes)
//
// The length counts the body only. FrameDecoder accepts the stream in chunks
// of any size (as Asio delivers them) and checks the length against
// [min_frame_size, max_frame_size] as soon as the 4 length bytes are in,
// before any allocation for the body; the body's buffer then grows only with
// the bytes that actually arrive. An out-of-range length is garbage: the
// decoder returns the error and stays failed (the connection must be closed,
// since a stream cannot be resynchronized).
//
// For a connection's hot path there are in-place forms that avoid copying
// frame bodies: BeginFrame/EndFrame let the writer build a body directly in
// its output buffer, and FrameReader parses frames where a socket read put
// them (same checks as FrameDecoder).
//
// Thread-safety: a FrameDecoder or FrameReader is used by one thread at a time.
#pragma once

#include <cstdint>
#include <vector>

#include "core/status.h"
#include "crypto/bytes.h"

namespace murmur::crypto {

inline constexpr std::size_t kFrameHeaderSize = 4;

struct FrameLimits {
  // Largest body accepted. The default fits one Noise transport message.
  std::uint32_t max_frame_size = 65535;
  // Smallest body accepted (16 for encrypted frames: the AEAD tag).
  std::uint32_t min_frame_size = 0;
};

// The limits of a murmur connection (docs/protocol.md, section 4): each body
// is one Noise message, 16 (a bare tag) to 65535 bytes.
inline constexpr FrameLimits kConnectionFrameLimits{65535, 16};

// Appends length || payload to *out. InvalidArgument when the payload is outside the limits.
Status AppendFrame(ByteSpan payload, const FrameLimits& limits, Bytes* out);

// Appends a placeholder length to *out and returns where the frame starts;
// append the body, then call EndFrame(out, start, limits), which writes the
// length. InvalidArgument when the body is outside the limits.
std::size_t BeginFrame(Bytes* out);
Status EndFrame(Bytes* out, std::size_t start, const FrameLimits& limits);

class FrameDecoder {
 public:
  explicit FrameDecoder(FrameLimits limits = {});
  // New limits for the frames after the current one (a handshake's tight
  // limits, then the session's). REQUIRES: between frames.
  void SetLimits(FrameLimits limits) { limits_ = limits; }

  // Consumes all of `bytes`; each completed frame body is appended to *frames.
  // ResourceExhausted (length over max) or DataLoss (length under min); after
  // an error every call returns FailedPrecondition. With `consumed`, it stops
  // after the first frame it completes and sets *consumed to the bytes it
  // used, so that the caller can change the limits for the next frame.
  Status Feed(ByteSpan bytes, std::vector<Bytes>* frames, std::size_t* consumed = nullptr);
  // OK when the stream may end here; DataLoss when a frame is cut off.
  Status Finish() const;

  bool failed() const { return failed_; }
  // Bytes held for the frame in progress (header and body).
  std::size_t buffered_bytes() const { return header_have_ + body_.size(); }
  const FrameLimits& limits() const { return limits_; }

 private:
  FrameLimits limits_;
  std::uint8_t header_[kFrameHeaderSize] = {};
  std::size_t header_have_ = 0;
  std::uint32_t body_need_ = 0;  // valid once header_have_ == 4
  Bytes body_;
  bool failed_ = false;
};

// Frames parsed in place in one reusable receive buffer: the caller reads
// from its socket into Space(), calls Commit, then takes frames with Next
// until it reports none. A complete frame is never copied; only the start of
// a frame cut by the end of a read is moved to the front of the buffer, when
// the free space at the end runs short of one largest frame.
class FrameReader {
 public:
  // REQUIRES: capacity >= kFrameHeaderSize + limits.max_frame_size.
  FrameReader(FrameLimits limits, std::size_t capacity);
  // Widens the limits and the buffer (a handshake's small ones, then the
  // session's): bytes already received are kept, and frames returned before
  // are no longer valid. REQUIRES: capacity >= kFrameHeaderSize +
  // limits.max_frame_size, and no smaller than now.
  void Grow(FrameLimits limits, std::size_t capacity);

  // Free space to read into; never empty. REQUIRES: Next has returned false
  // since the last Commit (every complete frame was taken).
  std::span<std::uint8_t> Space();
  // `n` bytes were written at the start of Space(). REQUIRES: n <= Space().size().
  void Commit(std::size_t n);
  // The next complete frame body, in place: valid (and writable, e.g. to
  // decrypt it) until the next Space() call. False when no complete frame is
  // buffered. ResourceExhausted / DataLoss for a length outside the limits,
  // checked as soon as its 4 bytes are in; after an error every call returns
  // FailedPrecondition.
  Result<bool> Next(std::span<std::uint8_t>* frame);

  bool failed() const { return failed_; }
  // Bytes received and not yet returned as frames.
  std::size_t buffered_bytes() const { return end_ - begin_; }
  // Those bytes (a listener sniffs a relay preface in them before any frame is taken).
  ByteSpan buffered() const { return ByteSpan(buffer_.data() + begin_, end_ - begin_); }

 private:
  FrameLimits limits_;
  Bytes buffer_;
  std::size_t begin_ = 0;  // first byte not yet returned
  std::size_t end_ = 0;    // one past the last byte received
  bool failed_ = false;
};

}  // namespace murmur::crypto
