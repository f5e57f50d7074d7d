// Fuzzes node::EnvelopeReader, the parser of the records a secure channel's
// plaintexts carry (docs/protocol.md, section 7): any sequence of records must
// give events or a Status, never a crash, and
//   - a failed reader stays failed;
//   - no more payload is buffered than the message bound and than the data
//     bytes fed since its BEGIN (memory grows only with what arrives);
//   - a completed message has exactly the total its BEGIN declared, and its
//     bytes are the data of its records, in order;
//   - a CERTIFICATE record's payload is the record after its type byte, and
//     the handshake-payload decoder the session then runs on it does not crash;
//   - a RELAY or PROBE record's node, token, flag and reason are its bytes
//     (sections 7.4, 7.5);
//   - every record is read in the order RecordSource promises (its header,
//     then one run of later bytes without gaps), on which the transport's
//     AES-GCM records rely.
// The whole input is also scanned as a connection's first bytes
// (ScanPreface: a token only from a whole preface of version 1) and parsed
// as a membership address (ParseMemberAddress: what it formats parses to
// the same address).
// Input: byte 0 picks the message bound (1 B .. 512 KiB); then records, each
// a u16 little-endian length, a keep flag byte and the record's bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "crypto/bytes.h"
#include "crypto/handshake.h"
#include "node/transport/address.h"
#include "node/transport/envelope.h"
#include "node/transport/preface.h"

using murmur::crypto::Bytes;
using murmur::crypto::ByteSpan;
using murmur::node::EnvelopeReader;
using murmur::node::RecordEvent;
using murmur::node::RecordType;

namespace {

// A record in memory that aborts on a read out of RecordSource's order.
class OrderedRecord : public murmur::node::RecordSource {
 public:
  explicit OrderedRecord(ByteSpan bytes)
      : bytes_(bytes), head_(std::min(bytes.size(), murmur::node::kBeginHeaderSize)) {}
  std::size_t size() const override { return bytes_.size(); }
  void Read(std::size_t offset, std::size_t n, std::uint8_t* dst) override {
    if (offset + n > bytes_.size()) std::abort();
    if (reads_++ == 0) {
      if (offset != 0 || n != head_) std::abort();
    } else {
      if (offset > head_ || (next_ != 0 && offset != next_)) std::abort();
      next_ = offset + n;
    }
    std::copy_n(bytes_.begin() + static_cast<std::ptrdiff_t>(offset), n, dst);
  }

 private:
  ByteSpan bytes_;
  std::size_t head_;
  std::size_t next_ = 0;
  int reads_ = 0;
};

}  // namespace

void CheckPrefaceAndAddress(const std::uint8_t* data, std::size_t size) {
  murmur::node::RelayToken token{};
  const auto scan = murmur::node::ScanPreface(ByteSpan(data, size), &token);
  if (scan.ok() && *scan == murmur::node::PrefaceScan::kPreface) {
    if (size < murmur::node::kPrefaceBytes ||
        murmur::node::PrefaceBytes(token) != Bytes(data, data + murmur::node::kPrefaceBytes))
      std::abort();
  }
  const std::string text(reinterpret_cast<const char*>(data), std::min<std::size_t>(size, 300));
  const auto address = murmur::node::ParseMemberAddress(text);
  if (!address.ok()) return;
  if (address->relays.size() > murmur::node::kMaxRelays) std::abort();
  const auto again = murmur::node::ParseMemberAddress(
      murmur::node::FormatMemberAddress(address->at, address->relays, address->offers_relay));
  if (!again.ok() || again->at.host != address->at.host || again->at.port != address->at.port ||
      again->relays != address->relays || again->offers_relay != address->offers_relay)
    std::abort();
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  CheckPrefaceAndAddress(data, size);
  if (size < 1) return 0;
  const std::uint64_t bound = std::uint64_t{1} << (data[0] % 20);
  EnvelopeReader reader(bound);
  bool failed = false;
  Bytes expected;              // the data bytes of the message in progress
  std::uint64_t declared = 0;  // its BEGIN's total
  bool keeping = false;
  std::size_t pos = 1;
  while (pos + 3 <= size) {
    const std::size_t len = data[pos] | (std::size_t{data[pos + 1]} << 8);
    const bool keep = data[pos + 2] % 2 == 0;
    pos += 3;
    const ByteSpan record(data + pos, std::min(len, size - pos));
    pos += record.size();
    const bool was_in_message = reader.in_message();
    RecordEvent event;
    OrderedRecord source(record);
    const murmur::Status st = reader.Feed(source, &event, keep);
    if (failed && st.ok()) std::abort();  // a failed reader stays failed
    if (!st.ok()) {
      failed = true;
      continue;
    }
    if (reader.buffered_bytes() > bound) std::abort();
    switch (event.type) {
      case RecordType::kBegin:
        if (was_in_message || record.size() < murmur::node::kBeginHeaderSize) std::abort();
        declared = 0;
        for (int i = 0; i < 8; ++i) declared |= std::uint64_t{record[5 + i]} << (8 * i);
        if (declared > bound) std::abort();
        keeping = keep;
        expected.assign(record.begin() + murmur::node::kBeginHeaderSize, record.end());
        break;
      case RecordType::kContinue:
        if (!was_in_message || record.size() < 2) std::abort();
        expected.insert(expected.end(), record.begin() + 1, record.end());
        break;
      case RecordType::kCertificate: {
        if (event.certificate != Bytes(record.begin() + 1, record.end())) std::abort();
        (void)murmur::crypto::DecodeHandshakePayload(event.certificate);
        break;
      }
      case RecordType::kRelayConnect:
      case RecordType::kRelayInvite:
        if (record.size() != 21 || event.relay_node != murmur::crypto::LoadU32(record.data() + 1) ||
            !std::equal(event.relay_token.begin(), event.relay_token.end(), record.begin() + 5))
          std::abort();
        break;
      case RecordType::kRelayRefused:
        if (record.size() < 18 || record[17] != record.size() - 18 ||
            !std::equal(event.relay_token.begin(), event.relay_token.end(), record.begin() + 1) ||
            event.relay_reason != std::string(record.begin() + 18, record.end()))
          std::abort();
        break;
      case RecordType::kProbeRequest:
        if (record.size() != 17 ||
            !std::equal(event.relay_token.begin(), event.relay_token.end(), record.begin() + 1))
          std::abort();
        break;
      case RecordType::kProbeResult:
        if (record.size() < 19 || record[17] > 2 ||
            static_cast<std::uint8_t>(event.probe_verdict) != record[17] ||
            record[18] != record.size() - 19 ||
            !std::equal(event.relay_token.begin(), event.relay_token.end(), record.begin() + 1) ||
            event.relay_reason != std::string(record.begin() + 19, record.end()))
          std::abort();
        break;
      default: break;
    }
    if (event.type == RecordType::kBegin || event.type == RecordType::kContinue) {
      if (expected.size() > declared) std::abort();
      if (keeping && reader.in_message() && reader.buffered_bytes() > expected.size()) std::abort();
      if (event.message.has_value()) {
        if (!keeping || expected.size() != declared || !(event.message->payload == expected)) std::abort();
      } else if (expected.size() == declared && keeping) {
        std::abort();  // complete, but no message
      }
    } else if (event.message.has_value()) {
      std::abort();
    }
  }
  return 0;
}
