#include "node/transport/envelope.h"

#include <algorithm>
#include <cstdlib>
#include <new>
#include <string>
#include <utility>

namespace murmur::node {

namespace {
// Memory reserved up front for a message is at most this; the rest grows with arrivals.
constexpr std::size_t kInitialReserve = std::size_t{1} << 20;
// When the buffer is full it grows to this many times its size (capped at the
// message's total): fewer copies of what arrived than doubling, while what is
// reserved stays within 4x the bytes that arrived (plus the first 1 MiB).
constexpr std::size_t kGrowthFactor = 4;
}  // namespace

crypto::Bytes HelloRecord(NodeId self) {
  crypto::Bytes out;
  crypto::AppendU8(&out, static_cast<std::uint8_t>(RecordType::kHello));
  crypto::AppendU32(&out, self);
  return out;
}

crypto::Bytes PingRecord(RecordType type, std::uint64_t token) {
  MURMUR_CHECK(type == RecordType::kPing || type == RecordType::kPong);
  crypto::Bytes out;
  crypto::AppendU8(&out, static_cast<std::uint8_t>(type));
  crypto::AppendU64(&out, token);
  return out;
}

crypto::Bytes CertificateRecord(const crypto::HandshakePayload& payload) {
  crypto::Bytes out;
  crypto::AppendU8(&out, static_cast<std::uint8_t>(RecordType::kCertificate));
  crypto::AppendBytes(&out, crypto::EncodeHandshakePayload(payload));
  return out;
}

crypto::Bytes RelayRecord(RecordType type, NodeId node, const RelayToken& token) {
  MURMUR_CHECK(type == RecordType::kRelayConnect || type == RecordType::kRelayInvite);
  crypto::Bytes out;
  crypto::AppendU8(&out, static_cast<std::uint8_t>(type));
  crypto::AppendU32(&out, node);
  crypto::AppendBytes(&out, token);
  return out;
}

crypto::Bytes RelayRefusedRecord(const RelayToken& token, std::string_view reason) {
  reason = reason.substr(0, kMaxRelayReasonBytes);
  crypto::Bytes out;
  crypto::AppendU8(&out, static_cast<std::uint8_t>(RecordType::kRelayRefused));
  crypto::AppendBytes(&out, token);
  crypto::AppendU8(&out, static_cast<std::uint8_t>(reason.size()));
  crypto::AppendBytes(&out, crypto::AsBytes(reason));
  return out;
}

crypto::Bytes ProbeRequestRecord(const RelayToken& nonce) {
  crypto::Bytes out;
  crypto::AppendU8(&out, static_cast<std::uint8_t>(RecordType::kProbeRequest));
  crypto::AppendBytes(&out, nonce);
  return out;
}

crypto::Bytes ProbeResultRecord(const RelayToken& nonce, ProbeVerdict verdict, std::string_view reason) {
  reason = reason.substr(0, kMaxRelayReasonBytes);
  crypto::Bytes out;
  crypto::AppendU8(&out, static_cast<std::uint8_t>(RecordType::kProbeResult));
  crypto::AppendBytes(&out, nonce);
  crypto::AppendU8(&out, static_cast<std::uint8_t>(verdict));
  crypto::AppendU8(&out, static_cast<std::uint8_t>(reason.size()));
  crypto::AppendBytes(&out, crypto::AsBytes(reason));
  return out;
}

std::size_t RecordCount(std::size_t payload_size, std::size_t max_plaintext) {
  MURMUR_CHECK(max_plaintext > kBeginHeaderSize);
  const std::size_t first = max_plaintext - kBeginHeaderSize;
  if (payload_size <= first) return 1;
  const std::size_t per = max_plaintext - kContinueHeaderSize;
  return 1 + (payload_size - first + per - 1) / per;
}

RecordPieces MessageRecord(std::uint32_t kind, crypto::ByteSpan payload, std::size_t max_plaintext,
                           std::size_t index) {
  MURMUR_CHECK(index < RecordCount(payload.size(), max_plaintext));
  const std::size_t first = max_plaintext - kBeginHeaderSize;
  const std::size_t per = max_plaintext - kContinueHeaderSize;
  RecordPieces r;
  if (index == 0) {
    r.header_bytes[0] = static_cast<std::uint8_t>(RecordType::kBegin);
    for (int i = 0; i < 4; ++i) r.header_bytes[1 + i] = static_cast<std::uint8_t>(kind >> (8 * i));
    const std::uint64_t total = payload.size();
    for (int i = 0; i < 8; ++i) r.header_bytes[5 + i] = static_cast<std::uint8_t>(total >> (8 * i));
    r.header_size = kBeginHeaderSize;
    r.data = payload.first(std::min(first, payload.size()));
    return r;
  }
  const std::size_t begin = first + (index - 1) * per;
  r.header_bytes[0] = static_cast<std::uint8_t>(RecordType::kContinue);
  r.header_size = kContinueHeaderSize;
  r.data = payload.subspan(begin, std::min(per, payload.size() - begin));
  return r;
}

void AppendRecord(std::uint32_t kind, crypto::ByteSpan payload, std::size_t max_plaintext, std::size_t index,
                  crypto::Bytes* out) {
  const RecordPieces r = MessageRecord(kind, payload, max_plaintext, index);
  crypto::AppendBytes(out, r.header());
  crypto::AppendBytes(out, r.data);
}

Status EnvelopeReader::Fail(Status s) {
  failed_ = true;
  payload_ = {};
  return s;
}

void EnvelopeReader::MaybeComplete(RecordEvent* event) {
  if (received_ < total_) return;
  if (keeping_) event->message = ReceivedMessage{kind_, std::move(payload_)};
  payload_ = {};
  in_message_ = false;
}

Payload::Payload(crypto::ByteSpan bytes) { std::copy(bytes.begin(), bytes.end(), Extend(bytes.size())); }

Payload::Payload(Payload&& other) noexcept
    : bytes_(std::move(other.bytes_)),
      size_(std::exchange(other.size_, 0)),
      capacity_(std::exchange(other.capacity_, 0)) {}

Payload& Payload::operator=(Payload&& other) noexcept {
  bytes_ = std::move(other.bytes_);
  size_ = std::exchange(other.size_, 0);
  capacity_ = std::exchange(other.capacity_, 0);
  return *this;
}

bool Payload::operator==(crypto::ByteSpan other) const {
  return std::equal(span().begin(), span().end(), other.begin(), other.end());
}

void Payload::Reserve(std::size_t n) {
  if (n <= capacity_) return;
  // realloc rather than a new block and a copy: the C library grows a large
  // block where it lies when it can (into the free space after it, or by
  // remapping its pages), and then what arrived is not copied again.
  void* bigger = std::realloc(bytes_.get(), n);
  if (bigger == nullptr) throw std::bad_alloc();
  static_cast<void>(bytes_.release());  // realloc took it
  bytes_.reset(static_cast<std::uint8_t*>(bigger));
  capacity_ = n;
}

std::uint8_t* Payload::Extend(std::size_t n) {
  Reserve(size_ + n);
  std::uint8_t* at = bytes_.get() + size_;
  size_ += n;
  return at;
}

void SpanRecord::Read(std::size_t offset, std::size_t n, std::uint8_t* dst) {
  std::copy_n(bytes_.begin() + static_cast<std::ptrdiff_t>(offset), n, dst);
}

Status EnvelopeReader::Feed(crypto::ByteSpan record, RecordEvent* event, bool keep) {
  SpanRecord source(record);
  return Feed(source, event, keep);
}

void EnvelopeReader::Append(RecordSource& record, std::size_t offset, std::size_t n) {
  if (payload_.size() + n > payload_.capacity())
    payload_.Reserve(
        std::min<std::uint64_t>(total_, std::max(kGrowthFactor * payload_.capacity(), payload_.size() + n)));
  record.Read(offset, n, payload_.Extend(n));
}

Status EnvelopeReader::Feed(RecordSource& source, RecordEvent* event, bool keep) {
  *event = RecordEvent{};
  if (failed_) return Status::FailedPrecondition("envelope reader failed earlier");
  const std::size_t size = source.size();
  // The header: at most the 13 bytes of BEGIN's.
  std::array<std::uint8_t, kBeginHeaderSize> head{};
  const std::size_t head_size = std::min(size, head.size());
  source.Read(0, head_size, head.data());
  const crypto::ByteSpan record(head.data(), head_size);
  crypto::ByteReader r(record);
  std::uint8_t type = 0;
  if (!r.ReadU8(&type)) return Fail(Status::DataLoss("empty record"));
  switch (static_cast<RecordType>(type)) {
    case RecordType::kHello: {
      crypto::ByteSpan id;
      if (size != 5 || !r.ReadSpan(4, &id)) return Fail(Status::DataLoss("HELLO record must be 5 bytes"));
      event->type = RecordType::kHello;
      event->hello_node = crypto::LoadU32(id.data());
      return Status::Ok();
    }
    case RecordType::kPing:
    case RecordType::kPong: {
      if (size != 9 || !r.ReadU64(&event->token))
        return Fail(Status::DataLoss("PING/PONG record must be 9 bytes"));
      event->type = static_cast<RecordType>(type);
      return Status::Ok();
    }
    case RecordType::kCertificate: {
      if (size < 2 || size - 1 > kMaxCertificateRecordPayload)
        return Fail(Status::DataLoss("CERTIFICATE record of " + std::to_string(size) + " bytes, limit " +
                                     std::to_string(1 + kMaxCertificateRecordPayload)));
      event->type = RecordType::kCertificate;
      event->certificate.resize(size - 1);
      source.Read(1, size - 1, event->certificate.data());
      return Status::Ok();
    }
    case RecordType::kRelayConnect:
    case RecordType::kRelayInvite: {
      constexpr std::size_t kSize = 1 + 4 + kRelayTokenSize;
      if (size != kSize) return Fail(Status::DataLoss("RELAY_CONNECT/RELAY_INVITE record must be 21 bytes"));
      std::array<std::uint8_t, kSize> all{};
      source.Read(0, kSize, all.data());
      event->type = static_cast<RecordType>(type);
      event->relay_node = crypto::LoadU32(all.data() + 1);
      std::copy_n(all.begin() + 5, kRelayTokenSize, event->relay_token.begin());
      return Status::Ok();
    }
    case RecordType::kRelayRefused: {
      constexpr std::size_t kFixed = 1 + kRelayTokenSize + 1;
      if (size < kFixed || size > kFixed + kMaxRelayReasonBytes)
        return Fail(Status::DataLoss("RELAY_REFUSED record of " + std::to_string(size) + " bytes"));
      crypto::Bytes all(size);
      source.Read(0, size, all.data());
      if (all[kFixed - 1] != size - kFixed)
        return Fail(Status::DataLoss("RELAY_REFUSED record's reason length disagrees with its size"));
      event->type = RecordType::kRelayRefused;
      std::copy_n(all.begin() + 1, kRelayTokenSize, event->relay_token.begin());
      event->relay_reason.assign(all.begin() + kFixed, all.end());
      return Status::Ok();
    }
    case RecordType::kProbeRequest: {
      if (size != 1 + kRelayTokenSize) return Fail(Status::DataLoss("PROBE_REQUEST record must be 17 bytes"));
      std::array<std::uint8_t, 1 + kRelayTokenSize> all{};
      source.Read(0, all.size(), all.data());
      event->type = RecordType::kProbeRequest;
      std::copy_n(all.begin() + 1, kRelayTokenSize, event->relay_token.begin());
      return Status::Ok();
    }
    case RecordType::kProbeResult: {
      constexpr std::size_t kFixed = 1 + kRelayTokenSize + 2;
      if (size < kFixed || size > kFixed + kMaxRelayReasonBytes)
        return Fail(Status::DataLoss("PROBE_RESULT record of " + std::to_string(size) + " bytes"));
      crypto::Bytes all(size);
      source.Read(0, size, all.data());
      if (all[kFixed - 2] > 2 || all[kFixed - 1] != size - kFixed)
        return Fail(Status::DataLoss("PROBE_RESULT record with a bad flag or reason length"));
      event->type = RecordType::kProbeResult;
      std::copy_n(all.begin() + 1, kRelayTokenSize, event->relay_token.begin());
      event->probe_verdict = static_cast<ProbeVerdict>(all[kFixed - 2]);
      event->relay_reason.assign(all.begin() + kFixed, all.end());
      return Status::Ok();
    }
    case RecordType::kBegin: {
      if (in_message_) return Fail(Status::DataLoss("BEGIN record inside an unfinished message"));
      crypto::ByteSpan kind;
      if (!r.ReadSpan(4, &kind) || !r.ReadU64(&total_))
        return Fail(Status::DataLoss("BEGIN record shorter than its 13-byte header"));
      if (total_ > max_message_bytes_) {
        return Fail(Status::ResourceExhausted("message of " + std::to_string(total_) + " bytes over limit " +
                                              std::to_string(max_message_bytes_)));
      }
      kind_ = crypto::LoadU32(kind.data());
      const std::size_t data = size - kBeginHeaderSize;
      if (data > total_) return Fail(Status::DataLoss("BEGIN record carries more than the message's total"));
      in_message_ = true;
      keeping_ = keep;
      received_ = data;
      payload_.Clear();
      if (keeping_) {
        payload_.Reserve(std::min<std::uint64_t>(total_, kInitialReserve));
        Append(source, kBeginHeaderSize, data);
      }
      event->type = RecordType::kBegin;
      MaybeComplete(event);
      return Status::Ok();
    }
    case RecordType::kContinue: {
      if (!in_message_) return Fail(Status::DataLoss("CONTINUE record without a message in progress"));
      const std::size_t data = size - kContinueHeaderSize;
      if (data == 0) return Fail(Status::DataLoss("empty CONTINUE record"));
      if (received_ + data > total_)
        return Fail(Status::DataLoss("CONTINUE record runs past the message's total of " +
                                     std::to_string(total_) + " bytes"));
      received_ += data;
      if (keeping_) Append(source, kContinueHeaderSize, data);
      event->type = RecordType::kContinue;
      MaybeComplete(event);
      return Status::Ok();
    }
  }
  return Fail(Status::DataLoss("unknown record type " + std::to_string(type)));
}

}  // namespace murmur::node
