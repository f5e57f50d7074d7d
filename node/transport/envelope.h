// Envelope: how application messages ride on a secure channel's plaintexts
// (docs/protocol.md, section 7 "Records").
//
// Every SecureChannel plaintext is one record, `u8 type || fields`:
//
//   1 HELLO     u32 sender node id                      first record on each side
//   2 BEGIN     u32 kind || u64 total || data           a message of `total` payload bytes starts
//   3 CONTINUE  data                                    the next payload bytes of that message
//   4 PING      u64 token                               keepalive; answered with PONG
//   5 PONG      u64 token
//   6 CERTIFICATE handshake credentials payload        the sender's renewed certificate (below)
//   7 RELAY_CONNECT  u32 target || token[16]           to a relay: splice me to `target`
//   8 RELAY_INVITE   u32 initiator || token[16]        from a relay: `initiator` asks for you
//   9 RELAY_REFUSED  token[16] || u8 n || reason[n]    from a relay: that circuit is refused
//  10 PROBE_REQUEST  nonce[16]                          dial me back at my address, with this nonce
//  11 PROBE_RESULT   nonce[16] || u8 r || u8 n || reason[n]    r: 0 not reached, 1 reached, 2 no verdict
//
// The three RELAY records set up a circuit through a relay
// (node/transport/relay.h, docs/protocol.md section 7.4): both ends then
// open a TCP connection to the relay, send a preface with their token, and
// run the Noise handshake with each other through it.
//
// CERTIFICATE carries crypto::EncodeHandshakePayload of the sender's new
// certificate and its signature of the session's Noise static key: a daemon
// that reloads its certificate sends it on every open session, so that the
// session outlives the old certificate (docs/protocol.md section 7).
//
// A message (core::Message kind + EncodeTo bytes) larger than one plaintext
// is cut into a BEGIN and CONTINUE records; records of one message are never
// interleaved with another message's (one sender per direction, in order).
// EnvelopeReader reassembles them and checks `total` against a bound before
// it reserves memory, then grows the buffer only with bytes that arrive (at
// most 1 MiB up front, then 4x when full, capped at the total).
//
// Thread-safety: values and single-owner readers; one thread at a time.
#pragma once

#include <array>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/env.h"
#include "core/status.h"
#include "crypto/bytes.h"
#include "crypto/handshake.h"

namespace murmur::node {

enum class RecordType : std::uint8_t {
  kHello = 1,
  kBegin = 2,
  kContinue = 3,
  kPing = 4,
  kPong = 5,
  kCertificate = 6,
  kRelayConnect = 7,
  kRelayInvite = 8,
  kRelayRefused = 9,
  kProbeRequest = 10,
  kProbeResult = 11
};

// A relay circuit's token: 16 random bytes, one per end of a circuit.
inline constexpr std::size_t kRelayTokenSize = 16;
using RelayToken = std::array<std::uint8_t, kRelayTokenSize>;
inline constexpr std::size_t kMaxRelayReasonBytes = 200;

inline constexpr std::size_t kBeginHeaderSize = 1 + 4 + 8;
inline constexpr std::size_t kContinueHeaderSize = 1;
// A CERTIFICATE record's payload: u8 version, u16 length, certificate, signature.
inline constexpr std::size_t kMaxCertificateRecordPayload =
    1 + 2 + crypto::kMaxCertificateSize + crypto::kSignatureSize;

crypto::Bytes HelloRecord(NodeId self);
crypto::Bytes PingRecord(RecordType type, std::uint64_t token);  // kPing or kPong
crypto::Bytes CertificateRecord(const crypto::HandshakePayload& payload);
// kRelayConnect (node = target) or kRelayInvite (node = initiator).
crypto::Bytes RelayRecord(RecordType type, NodeId node, const RelayToken& token);
// `reason` is cut to kMaxRelayReasonBytes.
crypto::Bytes RelayRefusedRecord(const RelayToken& token, std::string_view reason);
// The reachability probe (docs/protocol.md section 7.5); the nonce is a RelayToken's size.
crypto::Bytes ProbeRequestRecord(const RelayToken& nonce);
enum class ProbeVerdict : std::uint8_t { kNotReached = 0, kReached = 1, kNoVerdict = 2 };
crypto::Bytes ProbeResultRecord(const RelayToken& nonce, ProbeVerdict verdict, std::string_view reason);

// Number of records a message of `payload_size` bytes takes with plaintexts of
// at most `max_plaintext` bytes. REQUIRES: max_plaintext > kBeginHeaderSize.
std::size_t RecordCount(std::size_t payload_size, std::size_t max_plaintext);
// Record `index` (0 is BEGIN) of the message (kind, payload), appended to *out.
// REQUIRES: index < RecordCount(payload.size(), max_plaintext).
void AppendRecord(std::uint32_t kind, crypto::ByteSpan payload, std::size_t max_plaintext, std::size_t index,
                  crypto::Bytes* out);

// The same record as two pieces, its header and its slice of the payload
// (which stays where it is), for sealing straight into the write batch
// (crypto::AeadSlot::SealGather). The record's bytes are header() || data.
struct RecordPieces {
  std::array<std::uint8_t, kBeginHeaderSize> header_bytes{};
  std::size_t header_size = 0;
  crypto::ByteSpan data;

  crypto::ByteSpan header() const { return crypto::ByteSpan(header_bytes.data(), header_size); }
  std::size_t size() const { return header_size + data.size(); }
};
// REQUIRES: index < RecordCount(payload.size(), max_plaintext).
RecordPieces MessageRecord(std::uint32_t kind, crypto::ByteSpan payload, std::size_t max_plaintext,
                           std::size_t index);

// A message's payload bytes, contiguous. Unlike crypto::Bytes (a
// std::vector, which zero-fills whatever it grows by) it grows without
// initialising the new bytes, so that a record's data is decrypted straight
// into the message being reassembled: one pass over each byte, not a fill
// and then a pass (docs/benchmarks.md, the transport's CPU per GB).
//
// Thread-safety: a value; one thread at a time.
class Payload {
 public:
  Payload() = default;
  explicit Payload(crypto::ByteSpan bytes);
  Payload(Payload&& other) noexcept;
  Payload& operator=(Payload&& other) noexcept;
  Payload(const Payload&) = delete;
  Payload& operator=(const Payload&) = delete;

  const std::uint8_t* data() const { return bytes_.get(); }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  std::size_t capacity() const { return capacity_; }
  crypto::ByteSpan span() const { return {bytes_.get(), size_}; }
  bool operator==(crypto::ByteSpan other) const;

  // Capacity for at least n bytes (what is held may move). Throws
  // std::bad_alloc as a vector would.
  void Reserve(std::size_t n);
  // Adds n bytes of unspecified contents at the end (growing as Reserve
  // does) and returns them, for the caller to fill.
  std::uint8_t* Extend(std::size_t n);
  void Clear() { size_ = 0; }

 private:
  struct Free {
    void operator()(std::uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<std::uint8_t, Free> bytes_;  // from realloc (Reserve)
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

struct ReceivedMessage {
  std::uint32_t kind = 0;
  Payload payload;
};

// A record whose bytes are produced where the reader wants them, so that a
// transport can decrypt a record's data straight into the message being
// reassembled (no copy of the plaintext in between).
//
// EnvelopeReader::Feed reads a record in this order, on which a source may
// rely: first its header, bytes [0, min(size, kBeginHeaderSize)); then at
// most one run of later bytes, in increasing order without gaps or
// overlaps, which may begin inside the header (its bytes there read again).
// A source that decrypts as it is read (AES-GCM, which checks its tag only
// after the last byte) says in Authenticate whether what was read is
// authentic; whoever feeds the reader calls it after Feed and acts on
// neither Feed's event nor its error before it returns OK.
class RecordSource {
 public:
  virtual ~RecordSource() = default;
  virtual std::size_t size() const = 0;
  // Writes the record's bytes [offset, offset + n) to dst. REQUIRES: offset
  // + n <= size(), and the order above.
  virtual void Read(std::size_t offset, std::size_t n, std::uint8_t* dst) = 0;
  // OK when the record is authentic (by default: it was checked before any
  // byte was read); otherwise the error that ends the connection. Once, after Feed.
  virtual Status Authenticate() { return Status::Ok(); }
};

// A record already in memory, in the clear.
class SpanRecord : public RecordSource {
 public:
  explicit SpanRecord(crypto::ByteSpan bytes) : bytes_(bytes) {}
  std::size_t size() const override { return bytes_.size(); }
  void Read(std::size_t offset, std::size_t n, std::uint8_t* dst) override;

 private:
  crypto::ByteSpan bytes_;
};

// What one record meant.
struct RecordEvent {
  RecordType type = RecordType::kContinue;
  NodeId hello_node = kNoNode;  // kHello
  std::uint64_t token = 0;      // kPing, kPong
  crypto::Bytes certificate;    // kCertificate: the handshake payload, not yet decoded
  NodeId relay_node = kNoNode;  // kRelayConnect: the target; kRelayInvite: the initiator
  RelayToken relay_token{};     // the three RELAY records; the PROBE records' nonce
  std::string relay_reason;     // kRelayRefused, kProbeResult
  ProbeVerdict probe_verdict = ProbeVerdict::kNoVerdict;  // kProbeResult
  std::optional<ReceivedMessage> message;                 // set when a BEGIN/CONTINUE completed a message
};

class EnvelopeReader {
 public:
  // `max_message_bytes` bounds one reassembled message.
  explicit EnvelopeReader(std::uint64_t max_message_bytes) : max_message_bytes_(max_message_bytes) {}

  // Parses one record. DataLoss (truncated, unknown type, CONTINUE without a
  // message in progress, BEGIN inside one, data past `total`) or
  // ResourceExhausted (`total` over the bound). After an error the reader
  // stays failed (the connection must close). `keep` = false on a BEGIN
  // skips that message: its records are still checked as above, but no
  // payload byte is buffered and no message is produced.
  Status Feed(crypto::ByteSpan record, RecordEvent* event, bool keep = true);
  // The same, reading the record through `record` in the order RecordSource
  // says: each data byte once, straight into the message (never for a
  // skipped one).
  Status Feed(RecordSource& record, RecordEvent* event, bool keep = true);

  bool in_message() const { return in_message_; }
  std::size_t buffered_bytes() const { return payload_.size(); }

 private:
  Status Fail(Status s);
  void MaybeComplete(RecordEvent* event);
  // Appends the record's bytes [offset, offset + n) to the message, growing
  // the buffer as the class comment says.
  void Append(RecordSource& record, std::size_t offset, std::size_t n);

  std::uint64_t max_message_bytes_;
  bool failed_ = false;
  bool in_message_ = false;
  std::uint32_t kind_ = 0;
  std::uint64_t total_ = 0;
  std::uint64_t received_ = 0;  // payload bytes of the message in progress
  bool keeping_ = true;         // false: the message in progress is skipped
  Payload payload_;
};

}  // namespace murmur::node
