// Fuzzes crypto::FrameDecoder: any byte stream, cut into chunks chosen by the
// input, must give frames within the limits or a Status, never a crash; the
// frames must re-encode to exactly the bytes consumed, and the chunking must
// not change the result.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "crypto/frame_codec.h"

using murmur::crypto::Bytes;
using murmur::crypto::ByteSpan;
using murmur::crypto::FrameDecoder;
using murmur::crypto::FrameLimits;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 2) return 0;
  FrameLimits limits;
  limits.max_frame_size = 1u << (data[0] % 17);  // 1 B .. 64 KiB
  limits.min_frame_size = data[1] % 2 == 0 ? 0 : std::min<std::uint32_t>(16, limits.max_frame_size);
  const std::size_t chunk = 1 + data[1] / 2;
  ByteSpan stream(data + 2, size - 2);

  FrameDecoder whole(limits);
  std::vector<Bytes> whole_frames;
  murmur::Status whole_status = whole.Feed(stream, &whole_frames);

  FrameDecoder chunked(limits);
  std::vector<Bytes> chunked_frames;
  murmur::Status chunked_status;
  for (std::size_t pos = 0; pos < stream.size() && chunked_status.ok(); pos += chunk)
    chunked_status = chunked.Feed(stream.subspan(pos, std::min(chunk, stream.size() - pos)), &chunked_frames);

  if (whole_status.ok() != chunked_status.ok()) std::abort();
  if (whole_frames != chunked_frames) std::abort();
  Bytes again;
  for (const Bytes& f : whole_frames) {
    if (f.size() > limits.max_frame_size || f.size() < limits.min_frame_size) std::abort();
    if (!murmur::crypto::AppendFrame(f, limits, &again).ok()) std::abort();
  }
  if (again.size() > stream.size()) std::abort();
  for (std::size_t i = 0; i < again.size(); ++i)
    if (again[i] != stream[i]) std::abort();
  if (whole_status.ok() && again.size() + whole.buffered_bytes() != stream.size()) std::abort();
  return 0;
}
