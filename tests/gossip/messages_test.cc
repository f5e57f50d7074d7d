#include "gossip/messages.h"

#include <doctest/doctest.h>

#include "compression/compressor.h"

namespace murmur::gossip {
namespace {

TEST_CASE("A gossip message encodes to exactly EncodedSize bytes and decodes to itself") {
  auto comp = compression::MakeCompressor("topk:0.1:fp16,no-ef").value();
  std::vector<float> v(1000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 7) - 3.0f;
  compression::CompressorState state;
  Rng rng(1);
  UpdatePtr u = comp->Compress(v, Layout(), state, rng);
  GossipMessage m(Channel::kPushSum, 12345678901ull, 0.625, u);
  std::vector<std::uint8_t> bytes;
  m.EncodeTo(bytes);
  CHECK(bytes.size() == m.EncodedSize());
  auto back = GossipMessage::Decode(bytes, {}).value();
  CHECK(back->channel() == Channel::kPushSum);
  CHECK(back->round() == 12345678901ull);
  CHECK(back->scalar() == 0.625);
  CHECK(back->update() == *u);
}

TEST_CASE("Malformed gossip messages are rejected with a Status") {
  auto comp = compression::MakeCompressor("none").value();
  std::vector<float> v(10, 1.0f);
  compression::CompressorState state;
  Rng rng(1);
  GossipMessage m(Channel::kModel, 1, 0.0, comp->Compress(v, Layout(), state, rng));
  std::vector<std::uint8_t> bytes;
  m.EncodeTo(bytes);
  CHECK(GossipMessage::Decode(std::span(bytes).first(5), {}).status().code() == StatusCode::kDataLoss);
  auto bad_channel = bytes;
  bad_channel[0] = 9;
  CHECK(GossipMessage::Decode(bad_channel, {}).status().message().find("channel 9") != std::string::npos);
  auto truncated = bytes;
  truncated.pop_back();
  CHECK_FALSE(GossipMessage::Decode(truncated, {}).ok());
  auto nan_scalar = bytes;
  for (int k = 9; k < 17; ++k) nan_scalar[k] = 0xFF;
  CHECK_FALSE(GossipMessage::Decode(nan_scalar, {}).ok());
}

}  // namespace
}  // namespace murmur::gossip
