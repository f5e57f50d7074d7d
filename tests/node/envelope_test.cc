// Records of node/transport/envelope.h: chunking and reassembly against the layout of
// docs/protocol.md section 7, and every malformed record refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <numeric>
#include <optional>

#include "node/transport/envelope.h"

namespace murmur::node {
namespace {

crypto::Bytes Pattern(std::size_t n) {
  crypto::Bytes b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::uint8_t>(i * 131 + 7);
  return b;
}

TEST_CASE("A message is cut into BEGIN and CONTINUE records and reassembled byte for byte") {
  const std::size_t max_plain = 65519;
  for (std::size_t n :
       {std::size_t{0}, std::size_t{1}, max_plain - kBeginHeaderSize, max_plain - kBeginHeaderSize + 1,
        std::size_t{200000}, std::size_t{3} * 65518 + 65506}) {
    CAPTURE(n);
    crypto::Bytes payload = Pattern(n);
    const std::size_t count = RecordCount(n, max_plain);
    // ceil over the first record's and the continuation records' capacities.
    const std::size_t first = max_plain - 13, per = max_plain - 1;
    CHECK(count == (n <= first ? 1 : 1 + (n - first + per - 1) / per));
    EnvelopeReader reader(1 << 20);
    std::optional<ReceivedMessage> got;
    for (std::size_t i = 0; i < count; ++i) {
      crypto::Bytes rec;
      AppendRecord(0x10, payload, max_plain, i, &rec);
      CHECK(rec.size() <= max_plain);
      CHECK(rec[0] == (i == 0 ? 2 : 3));
      RecordEvent ev;
      REQUIRE(reader.Feed(rec, &ev).ok());
      CHECK(ev.message.has_value() == (i + 1 == count));
      if (ev.message) got = std::move(ev.message);
    }
    REQUIRE(got.has_value());
    CHECK(got->kind == 0x10);
    CHECK(got->payload == payload);
    CHECK_FALSE(reader.in_message());
  }
}

// A source that checks the order RecordSource promises (node/transport/envelope.h):
// the header first, then one run of later bytes in increasing order, without gaps.
class OrderCheckingRecord : public RecordSource {
 public:
  explicit OrderCheckingRecord(crypto::ByteSpan bytes)
      : bytes_(bytes), head_(std::min(bytes.size(), kBeginHeaderSize)) {}
  std::size_t size() const override { return bytes_.size(); }
  void Read(std::size_t offset, std::size_t n, std::uint8_t* dst) override {
    ++reads_;
    if (reads_ == 1) {
      CHECK(offset == 0);
      CHECK(n == head_);
    } else {
      CHECK(offset <= head_);  // a run may begin inside the header
      if (next_ != 0) CHECK(offset == next_);
      next_ = offset + n;
    }
    std::copy_n(bytes_.begin() + static_cast<std::ptrdiff_t>(offset), n, dst);
  }
  int reads() const { return reads_; }

 private:
  crypto::ByteSpan bytes_;
  std::size_t head_;
  std::size_t next_ = 0;
  int reads_ = 0;
};

TEST_CASE(
    "A 5 MB message grows its buffer past the first 1 MiB, byte for byte, reading in RecordSource's order") {
  const std::size_t max_plain = 65519, n = 5'000'000;
  const crypto::Bytes payload = Pattern(n);
  EnvelopeReader reader(n);
  std::optional<ReceivedMessage> got;
  const std::size_t count = RecordCount(n, max_plain);
  for (std::size_t i = 0; i < count; ++i) {
    crypto::Bytes rec;
    AppendRecord(0x10, payload, max_plain, i, &rec);
    OrderCheckingRecord source(rec);
    RecordEvent ev;
    REQUIRE(reader.Feed(source, &ev).ok());
    CHECK(source.reads() == 2);  // the header, then the record's data in one read
    if (ev.message) got = std::move(ev.message);
  }
  REQUIRE(got.has_value());
  CHECK(got->payload.size() == n);
  CHECK(got->payload == payload);
}

TEST_CASE("Payload: Extend keeps what is there as it grows, and a move leaves the source empty") {
  Payload p;
  CHECK(p.empty());
  CHECK(p == crypto::ByteSpan());
  const crypto::Bytes a = Pattern(1000), b = Pattern(3'000'000);
  std::copy(a.begin(), a.end(), p.Extend(a.size()));
  p.Reserve(10);  // below the capacity: nothing changes
  CHECK(p == a);
  std::copy(b.begin(), b.end(), p.Extend(b.size()));
  CHECK(p.size() == a.size() + b.size());
  CHECK(p.capacity() >= p.size());
  crypto::Bytes both = a;
  both.insert(both.end(), b.begin(), b.end());
  CHECK(p == both);
  Payload q = std::move(p);
  CHECK(q == both);
  CHECK(p.empty());  // NOLINT(bugprone-use-after-move): a moved-from Payload is empty
  CHECK(p.capacity() == 0);
  CHECK(Payload(crypto::ByteSpan(a)) == a);
  CHECK_FALSE(Payload(crypto::ByteSpan(a)) == crypto::ByteSpan(a).first(999));
}

TEST_CASE("BEGIN's header is u8 2, u32 kind, u64 total, little-endian") {
  crypto::Bytes rec;
  AppendRecord(0x01020304, Pattern(3), 100, 0, &rec);
  const crypto::Bytes want = {2, 4, 3, 2, 1, 3, 0, 0, 0, 0, 0, 0, 0, 7, 138, 13};
  CHECK(rec == want);
  CHECK(HelloRecord(0x0A0B0C0D) == crypto::Bytes{1, 0x0D, 0x0C, 0x0B, 0x0A});
  CHECK(PingRecord(RecordType::kPong, 1) == crypto::Bytes{5, 1, 0, 0, 0, 0, 0, 0, 0});
}

TEST_CASE("A CERTIFICATE record is u8 6 and the handshake payload, read whole between a message's records") {
  // The payload's bound: u8 version, u16 length, a certificate with a 64-byte
  // network id (67 + 64 + 64 bytes, docs/protocol.md section 2), a signature.
  CHECK(kMaxCertificateRecordPayload == 1 + 2 + (67 + 64 + 64) + 64);
  crypto::HandshakePayload p;
  p.certificate.node_id = 3;
  p.certificate.network_id = "fleet";
  p.certificate.roles = crypto::kRoleNode;
  p.certificate.serial = 7;
  p.certificate.not_after = 1;
  p.static_key_signature.fill(0xAB);
  const crypto::Bytes rec = CertificateRecord(p);
  REQUIRE(rec.size() == 1 + 1 + 2 + (67 + 5 + 64) + 64);
  CHECK(rec[0] == 6);
  EnvelopeReader reader(1 << 20);
  RecordEvent ev;
  crypto::Bytes begin;
  AppendRecord(0x10, Pattern(200), 100, 0, &begin);  // a message of 3 records is in progress
  REQUIRE(reader.Feed(begin, &ev).ok());
  REQUIRE(reader.Feed(rec, &ev).ok());
  CHECK(ev.type == RecordType::kCertificate);
  CHECK(ev.certificate == crypto::Bytes(rec.begin() + 1, rec.end()));
  auto decoded = crypto::DecodeHandshakePayload(ev.certificate);
  REQUIRE(decoded.ok());
  CHECK(decoded->certificate == p.certificate);
  for (std::size_t i = 1; i < 3; ++i) {
    crypto::Bytes next;
    AppendRecord(0x10, Pattern(200), 100, i, &next);
    REQUIRE(reader.Feed(next, &ev).ok());
  }
  REQUIRE(ev.message.has_value());
  CHECK(ev.message->payload == Pattern(200));
}

TEST_CASE("Malformed records are refused and the reader stays failed") {
  struct Case {
    const char* name;
    std::vector<crypto::Bytes> records;
    StatusCode code;
  };
  crypto::Bytes huge = {2, 0x10, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0};  // 4 GiB total
  crypto::Bytes begin10 = {2, 0x10, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 1, 2};
  std::vector<Case> cases = {
      {"empty", {{}}, StatusCode::kDataLoss},
      {"unknown type", {{9, 1, 2}}, StatusCode::kDataLoss},
      {"short hello", {{1, 1, 2}}, StatusCode::kDataLoss},
      {"long ping", {{4, 1, 2, 3, 4, 5, 6, 7, 8, 9}}, StatusCode::kDataLoss},
      {"truncated begin", {{2, 0x10, 0, 0}}, StatusCode::kDataLoss},
      {"4 GiB message", {huge}, StatusCode::kResourceExhausted},
      {"continue without begin", {{3, 1, 2}}, StatusCode::kDataLoss},
      {"begin inside a message", {begin10, begin10}, StatusCode::kDataLoss},
      {"continue past total", {begin10, crypto::Bytes(10, 3)}, StatusCode::kDataLoss},
      {"begin data past total", {{2, 0x10, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 2}}, StatusCode::kDataLoss},
      {"empty certificate", {{6}}, StatusCode::kDataLoss},
      {"certificate over its bound",
       {crypto::Bytes(2 + kMaxCertificateRecordPayload, 6)},
       StatusCode::kDataLoss},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    EnvelopeReader reader(1 << 20);
    RecordEvent ev;
    Status last;
    for (const auto& r : c.records) {
      last = reader.Feed(r, &ev);
      if (!last.ok()) break;
    }
    CHECK(last.code() == c.code);
    CHECK(reader.Feed(HelloRecord(1), &ev).code() == StatusCode::kFailedPrecondition);
    CHECK(reader.buffered_bytes() == 0);
  }
}

}  // namespace
}  // namespace murmur::node
