#include "federated/messages.h"

#include <doctest/doctest.h>

#include "compression/compressor.h"

namespace murmur::federated {
namespace {

FedMessage Sample() {
  auto comp = compression::MakeCompressor("topk:0.2:fp16,no-ef").value();
  std::vector<float> v(100);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 9) - 4.0f;
  compression::CompressorState state;
  Rng rng(1);
  FedHeader h{FedKind::kResult, kFlagIsModel, 17, 123456789012ull, 600.0, 0.25, 5'000'000};
  return FedMessage(h, {comp->Compress(v, Layout(), state, rng), comp->Compress(v, Layout(), state, rng)});
}

TEST_CASE("A federated message encodes to EncodedSize bytes and decodes to itself") {
  FedMessage m = Sample();
  std::vector<std::uint8_t> bytes;
  m.EncodeTo(bytes);
  CHECK(bytes.size() == m.EncodedSize());
  auto back = FedMessage::Decode(bytes, {}).value();
  CHECK(back->header().kind == FedKind::kResult);
  CHECK(back->header().flags == kFlagIsModel);
  CHECK(back->header().steps == 17);
  CHECK(back->header().round == 123456789012ull);
  CHECK(back->header().weight == 600.0);
  CHECK(back->header().loss == 0.25);
  CHECK(back->header().budget_ns == 5'000'000);
  REQUIRE(back->updates().size() == 2);
  CHECK(*back->updates()[1] == *m.updates()[1]);
}

TEST_CASE("An edge aggregator's empty result (no update values) round-trips") {
  FedHeader h;
  h.kind = FedKind::kResult;
  h.flags = kFlagEmpty;
  h.round = 7;
  FedMessage m(h, {compression::DenseF32Update({})});
  std::vector<std::uint8_t> bytes;
  m.EncodeTo(bytes);
  CHECK(bytes.size() == m.EncodedSize());
  auto back = FedMessage::Decode(bytes, {});
  REQUIRE(back.ok());
  CHECK(back.value()->header().flags == kFlagEmpty);
  CHECK(back.value()->header().round == 7);
  CHECK(back.value()->updates()[0]->size() == 0);
  bytes[1] = 16;  // an unknown flag bit
  CHECK(FedMessage::Decode(bytes, {}).status().message().find("flags") != std::string::npos);
}

TEST_CASE("Malformed federated messages are rejected with a Status, never an abort") {
  std::vector<std::uint8_t> bytes;
  Sample().EncodeTo(bytes);
  // Every truncation is refused.
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    CAPTURE(n);
    CHECK(!FedMessage::Decode(std::span(bytes).first(n), {}).ok());
  }
  auto bad = bytes;
  bad[0] = 7;
  CHECK(FedMessage::Decode(bad, {}).status().message().find("kind 7") != std::string::npos);
  bad = bytes;
  bad[38] = 3;
  CHECK(FedMessage::Decode(bad, {}).status().message().find("3 updates") != std::string::npos);
  bad = bytes;
  bad[39] = 0xFF, bad[40] = 0xFF, bad[41] = 0xFF, bad[42] = 0x7F;  // huge length
  CHECK(!FedMessage::Decode(bad, {}).ok());
  bad = bytes;
  bad.push_back(0);
  CHECK(FedMessage::Decode(bad, {}).status().message().find("trailing") != std::string::npos);
  // Bytes flipped anywhere give a Status or a valid message, never a crash.
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    auto f = bytes;
    f[i] ^= 0x5A;
    (void)FedMessage::Decode(f, {});
  }
}

}  // namespace
}  // namespace murmur::federated
