#include "node/envelope.h"

#include <algorithm>
#include <string>

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

std::size_t RecordCount(std::size_t payload_size, std::size_t max_plaintext) {
  MURMUR_CHECK(max_plaintext > kBeginHeaderSize);
  const std::size_t first = max_plaintext - kBeginHeaderSize;
  if (payload_size <= first) return 1;
  const std::size_t per = max_plaintext - kContinueHeaderSize;
  return 1 + (payload_size - first + per - 1) / per;
}

void AppendRecord(std::uint32_t kind, crypto::ByteSpan payload, std::size_t max_plaintext, std::size_t index,
                  crypto::Bytes* out) {
  MURMUR_CHECK(index < RecordCount(payload.size(), max_plaintext));
  const std::size_t first = max_plaintext - kBeginHeaderSize;
  const std::size_t per = max_plaintext - kContinueHeaderSize;
  if (index == 0) {
    crypto::AppendU8(out, static_cast<std::uint8_t>(RecordType::kBegin));
    crypto::AppendU32(out, kind);
    crypto::AppendU64(out, payload.size());
    crypto::AppendBytes(out, payload.first(std::min(first, payload.size())));
    return;
  }
  const std::size_t begin = first + (index - 1) * per;
  const std::size_t len = std::min(per, payload.size() - begin);
  crypto::AppendU8(out, static_cast<std::uint8_t>(RecordType::kContinue));
  crypto::AppendBytes(out, payload.subspan(begin, len));
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

Status EnvelopeReader::Feed(crypto::ByteSpan record, RecordEvent* event, bool keep) {
  *event = RecordEvent{};
  if (failed_) return Status::FailedPrecondition("envelope reader failed earlier");
  crypto::ByteReader r(record);
  std::uint8_t type = 0;
  if (!r.ReadU8(&type)) return Fail(Status::DataLoss("empty record"));
  switch (static_cast<RecordType>(type)) {
    case RecordType::kHello: {
      crypto::ByteSpan id;
      if (record.size() != 5 || !r.ReadSpan(4, &id))
        return Fail(Status::DataLoss("HELLO record must be 5 bytes"));
      event->type = RecordType::kHello;
      event->hello_node = crypto::LoadU32(id.data());
      return Status::Ok();
    }
    case RecordType::kPing:
    case RecordType::kPong: {
      if (record.size() != 9 || !r.ReadU64(&event->token))
        return Fail(Status::DataLoss("PING/PONG record must be 9 bytes"));
      event->type = static_cast<RecordType>(type);
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
      const std::size_t data = record.size() - kBeginHeaderSize;
      if (data > total_) return Fail(Status::DataLoss("BEGIN record carries more than the message's total"));
      in_message_ = true;
      keeping_ = keep;
      received_ = data;
      payload_.clear();
      if (keeping_) {
        payload_.reserve(std::min<std::uint64_t>(total_, kInitialReserve));
        payload_.insert(payload_.end(), record.begin() + kBeginHeaderSize, record.end());
      }
      event->type = RecordType::kBegin;
      MaybeComplete(event);
      return Status::Ok();
    }
    case RecordType::kContinue: {
      if (!in_message_) return Fail(Status::DataLoss("CONTINUE record without a message in progress"));
      const std::size_t data = record.size() - kContinueHeaderSize;
      if (data == 0) return Fail(Status::DataLoss("empty CONTINUE record"));
      if (received_ + data > total_)
        return Fail(Status::DataLoss("CONTINUE record runs past the message's total of " +
                                     std::to_string(total_) + " bytes"));
      received_ += data;
      if (keeping_) {
        if (payload_.size() + data > payload_.capacity())
          payload_.reserve(std::min<std::uint64_t>(total_, kGrowthFactor * payload_.capacity()));
        payload_.insert(payload_.end(), record.begin() + kContinueHeaderSize, record.end());
      }
      event->type = RecordType::kContinue;
      MaybeComplete(event);
      return Status::Ok();
    }
  }
  return Fail(Status::DataLoss("unknown record type " + std::to_string(type)));
}

}  // namespace murmur::node
