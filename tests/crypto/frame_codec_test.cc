// The frame codec: any chunking of the stream gives the same frames; lengths
// over the limit are refused as soon as the 4 length bytes are in.
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <vector>

#include "core/rng.h"
#include "crypto/frame_codec.h"

namespace murmur::crypto {
namespace {

std::vector<Bytes> SomeFrames(Rng& rng, int count, std::uint32_t max) {
  std::vector<Bytes> frames;
  for (int i = 0; i < count; ++i) {
    Bytes f(rng.UniformInt(max + 1));
    for (auto& b : f) b = static_cast<std::uint8_t>(rng.NextU32());
    frames.push_back(std::move(f));
  }
  frames.push_back({});  // an empty frame is legal when min_frame_size is 0
  return frames;
}

// Feeds `stream` to `reader` in reads of chunk() bytes (at most what fits)
// and returns every frame; after_frame(k) runs once k frames are out.
std::vector<Bytes> ReadThrough(FrameReader& reader, ByteSpan stream,
                               const std::function<std::size_t()>& chunk,
                               const std::function<void(std::size_t)>& after_frame = {}) {
  std::vector<Bytes> got;
  std::size_t pos = 0;
  while (pos < stream.size()) {
    std::span<std::uint8_t> space = reader.Space();
    const std::size_t n = std::min<std::size_t>({space.size(), stream.size() - pos, chunk()});
    std::copy_n(stream.begin() + static_cast<std::ptrdiff_t>(pos), n, space.begin());
    reader.Commit(n);
    pos += n;
    std::span<std::uint8_t> frame;
    while (true) {
      auto next = reader.Next(&frame);
      REQUIRE(next.ok());
      if (!*next) break;
      got.emplace_back(frame.begin(), frame.end());
      if (after_frame) after_frame(got.size());
    }
  }
  return got;
}

TEST_CASE("frames survive arbitrary chunking of the stream") {
  for (std::uint64_t seed = 1; seed <= 30; ++seed) {
    CAPTURE(seed);
    Rng rng(seed);
    FrameLimits limits;
    limits.max_frame_size = 3000;
    std::vector<Bytes> frames = SomeFrames(rng, 20, limits.max_frame_size);
    Bytes stream;
    for (const Bytes& f : frames) REQUIRE(AppendFrame(f, limits, &stream).ok());
    FrameDecoder dec(limits);
    std::vector<Bytes> got;
    std::size_t pos = 0;
    while (pos < stream.size()) {
      // Chunks of 1 byte up to a few frames long, including splits inside the header.
      std::size_t n = seed % 3 == 0 ? 1 : 1 + rng.UniformInt(seed % 3 == 1 ? 7 : 5000);
      n = std::min(n, stream.size() - pos);
      REQUIRE(dec.Feed(ByteSpan(stream).subspan(pos, n), &got).ok());
      pos += n;
    }
    CHECK(dec.Finish().ok());
    CHECK(dec.buffered_bytes() == 0);
    CHECK(got == frames);
  }
}

TEST_CASE("a 4 GiB length prefix is refused before any body allocation") {
  FrameDecoder dec;  // default limit 65535
  std::vector<Bytes> got;
  const Bytes huge = {0xff, 0xff, 0xff, 0xff};
  CHECK(dec.Feed(ByteSpan(huge).first(3), &got).ok());  // not yet a whole header
  Status s = dec.Feed(ByteSpan(huge).subspan(3), &got);
  CHECK(s.code() == StatusCode::kResourceExhausted);
  CHECK(s.message() == "frame length 4294967295 over limit 65535");
  CHECK(dec.buffered_bytes() == 4);  // only the header is held
  CHECK(dec.failed());
  CHECK(dec.Feed(Bytes{1}, &got).code() == StatusCode::kFailedPrecondition);
  CHECK(got.empty());
  // One past the limit is refused, the limit itself accepted.
  FrameLimits limits;
  limits.max_frame_size = 100;
  Bytes at_limit, over;
  REQUIRE(AppendFrame(Bytes(100, 1), limits, &at_limit).ok());
  CHECK(AppendFrame(Bytes(101, 1), limits, &over).code() == StatusCode::kInvalidArgument);
  FrameDecoder d2(limits);
  CHECK(d2.Feed(at_limit, &got).ok());
  CHECK(got.size() == 1);
  const Bytes len101 = {101, 0, 0, 0};
  CHECK(d2.Feed(len101, &got).code() == StatusCode::kResourceExhausted);
}

TEST_CASE("garbage and truncated streams give a Status") {
  FrameDecoder dec(kConnectionFrameLimits);  // an encrypted frame holds at least its tag
  std::vector<Bytes> got;
  const Bytes short_frame = {3, 0, 0, 0, 'a', 'b', 'c'};
  CHECK(dec.Feed(short_frame, &got).code() == StatusCode::kDataLoss);

  FrameDecoder cut;
  const Bytes partial = {10, 0, 0, 0, 1, 2, 3};
  CHECK(cut.Feed(partial, &got).ok());
  CHECK(cut.Finish().code() == StatusCode::kDataLoss);
  FrameDecoder cut_header;
  CHECK(cut_header.Feed(ByteSpan(partial).first(2), &got).ok());
  CHECK(cut_header.Finish().code() == StatusCode::kDataLoss);

  // Random bytes: the decoder either yields in-limit frames or fails, never more.
  for (std::uint64_t seed = 1; seed <= 200; ++seed) {
    CAPTURE(seed);
    Rng rng(seed, 0, RngPurpose::kGeneric);
    Bytes noise(1 + rng.UniformInt(300));
    for (auto& b : noise) b = static_cast<std::uint8_t>(rng.NextU32());
    FrameLimits small;
    small.max_frame_size = 64;
    FrameDecoder d(small);
    std::vector<Bytes> frames;
    Status s = d.Feed(noise, &frames);
    std::size_t consumed = 0;
    for (const Bytes& f : frames) {
      CHECK(f.size() <= 64);
      consumed += 4 + f.size();
    }
    if (s.ok()) CHECK(consumed + d.buffered_bytes() == noise.size());
  }
}

TEST_CASE("FrameReader gives the frames FrameDecoder gives, in place, for any read sizes") {
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    CAPTURE(seed);
    Rng rng(seed);
    FrameLimits limits;
    limits.max_frame_size = 3000;
    std::vector<Bytes> frames = SomeFrames(rng, 40, limits.max_frame_size);
    Bytes stream;
    for (const Bytes& f : frames) {
      const std::size_t start = BeginFrame(&stream);
      stream.insert(stream.end(), f.begin(), f.end());
      REQUIRE(EndFrame(&stream, start, limits).ok());
    }
    Bytes reference;
    for (const Bytes& f : frames) REQUIRE(AppendFrame(f, limits, &reference).ok());
    CHECK(stream == reference);  // BeginFrame/EndFrame write what AppendFrame writes

    FrameReader reader(limits, 4 + 3000 + rng.UniformInt(3000));
    const std::vector<Bytes> got = ReadThrough(
        reader, stream, [&] { return 1 + static_cast<std::size_t>(rng.UniformInt(seed % 2 ? 9 : 4000)); });
    CHECK(reader.buffered_bytes() == 0);
    CHECK(got == frames);
  }
}

TEST_CASE("FrameReader refuses lengths outside the limits as soon as the header is in, and stays failed") {
  FrameReader reader(kConnectionFrameLimits, 70000);
  const Bytes good_then_bad = {16, 0,  0,  0,  1,  2,  3,  4,  5,    6,    7,    8,
                               9,  10, 11, 12, 13, 14, 15, 16, 0xFF, 0xFF, 0xFF, 0xFF};
  std::span<std::uint8_t> space = reader.Space();
  std::copy(good_then_bad.begin(), good_then_bad.end(), space.begin());
  reader.Commit(good_then_bad.size());
  std::span<std::uint8_t> frame;
  auto first = reader.Next(&frame);
  REQUIRE(first.ok());
  CHECK(*first);
  CHECK(frame.size() == 16);
  CHECK(reader.Next(&frame).status().code() == StatusCode::kResourceExhausted);
  CHECK(reader.Next(&frame).status().code() == StatusCode::kFailedPrecondition);

  FrameReader small(kConnectionFrameLimits, 70000);
  space = small.Space();
  const Bytes too_short = {15, 0, 0, 0};
  std::copy(too_short.begin(), too_short.end(), space.begin());
  small.Commit(4);
  CHECK(small.Next(&frame).status().code() == StatusCode::kDataLoss);

  Bytes out = {9};
  const std::size_t start = BeginFrame(&out);
  CHECK(EndFrame(&out, start, kConnectionFrameLimits).code() == StatusCode::kInvalidArgument);
  CHECK(out == Bytes{9});  // a refused frame leaves nothing behind
}

}  // namespace
}  // namespace murmur::crypto

namespace murmur::crypto {
namespace {

// A handshake's tight limits, then a session's, switched at the frame that
// ends the handshake even when the next frames came in the same read.
TEST_CASE("Limits change at a frame boundary: FrameDecoder one frame at a time, FrameReader::Grow") {
  const FrameLimits tight{64, 32};
  const FrameLimits wide{65535, 16};
  Bytes wire;
  REQUIRE(AppendFrame(Bytes(40, 1), tight, &wire).ok());  // the last handshake message
  REQUIRE(AppendFrame(Bytes(20, 2), wide, &wire).ok());   // under the tight minimum
  REQUIRE(AppendFrame(Bytes(500, 3), wide, &wire).ok());  // over the tight maximum

  FrameDecoder all_at_once(tight);
  std::vector<Bytes> frames;
  CHECK_FALSE(all_at_once.Feed(wire, &frames).ok());  // the second frame breaks the tight limits

  FrameDecoder decoder(tight);
  frames.clear();
  ByteSpan rest(wire);
  while (!rest.empty()) {
    std::size_t used = 0;
    REQUIRE(decoder.Feed(rest, &frames, &used).ok());
    REQUIRE(used > 0);
    rest = rest.subspan(used);
    if (frames.size() == 1) decoder.SetLimits(wide);
  }
  REQUIRE(frames.size() == 3);
  CHECK(frames[2] == Bytes(500, 3));

  FrameReader reader(tight, kFrameHeaderSize + tight.max_frame_size);
  const std::vector<Bytes> got = ReadThrough(
      reader, wire, [] { return std::size_t{1} << 20; },
      [&](std::size_t n) {
        if (n == 1) reader.Grow(wide, kFrameHeaderSize + wide.max_frame_size);
      });
  REQUIRE(got.size() == 3);
  CHECK(got[1] == Bytes(20, 2));
  CHECK(got[2] == Bytes(500, 3));
}

}  // namespace
}  // namespace murmur::crypto
