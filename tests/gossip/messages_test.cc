#include "gossip/messages.h"

#include <doctest/doctest.h>

#include "compression/compressor.h"
#include "gossip/inbox.h"

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

namespace murmur::gossip {
namespace {

TEST_CASE("The round inbox gives one sender's held messages by round and forgets them on request") {
  auto msg = [](std::uint64_t round) {
    return std::make_shared<const GossipMessage>(Channel::kModel, round, 0.0,
                                                 compression::DenseF32Update(std::vector<float>{1.0f}));
  };
  RoundInbox inbox;
  inbox.Close(2);  // rounds 0-2 are over
  const auto a4 = msg(4), a3 = msg(3), b3 = msg(3);
  inbox.Add(1, a4);  // a neighbour two rounds ahead, then its round 3 (another one's order)
  inbox.Add(2, b3);
  inbox.Add(1, a3);
  const auto held = inbox.HeldFrom(1);
  REQUIRE(held.size() == 2);
  CHECK(held[0].msg == a3);  // by round, not by arrival
  CHECK(held[1].msg == a4);
  CHECK(inbox.DropFrom(1) == 2);
  CHECK(inbox.HeldFrom(1).empty());
  CHECK(inbox.Count(3, Channel::kModel) == 1);  // the other sender's stays
  CHECK(inbox.pending_rounds() == 1);           // round 4 held nothing else
  CHECK(inbox.closed_below() == 3);
  CHECK(inbox.DropFrom(1) == 0);
}

}  // namespace
}  // namespace murmur::gossip
