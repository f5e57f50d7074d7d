#include "node/job/job_message.h"

#include <google/protobuf/descriptor.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "crypto/bytes.h"
#include "crypto/hmac.h"

namespace murmur::node {

namespace {

using google::protobuf::FieldDescriptor;

// True when the (set) singular field holds its declared default value.
bool AtDefault(const google::protobuf::Message& m, const FieldDescriptor* f) {
  const auto* r = m.GetReflection();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32: return r->GetInt32(m, f) == f->default_value_int32();
    case FieldDescriptor::CPPTYPE_INT64: return r->GetInt64(m, f) == f->default_value_int64();
    case FieldDescriptor::CPPTYPE_UINT32: return r->GetUInt32(m, f) == f->default_value_uint32();
    case FieldDescriptor::CPPTYPE_UINT64: return r->GetUInt64(m, f) == f->default_value_uint64();
    case FieldDescriptor::CPPTYPE_DOUBLE: return r->GetDouble(m, f) == f->default_value_double();
    case FieldDescriptor::CPPTYPE_FLOAT: return r->GetFloat(m, f) == f->default_value_float();
    case FieldDescriptor::CPPTYPE_BOOL: return r->GetBool(m, f) == f->default_value_bool();
    case FieldDescriptor::CPPTYPE_ENUM: return r->GetEnumValue(m, f) == f->default_value_enum()->number();
    case FieldDescriptor::CPPTYPE_STRING: return r->GetString(m, f) == f->default_value_string();
    case FieldDescriptor::CPPTYPE_MESSAGE: return false;
  }
  return false;
}

constexpr char kTagDomain[] = "murmur-job-tag-v1";  // hashed with its terminating 0x00

}  // namespace

namespace {

// Clears every singular field at its default; an embedded message is made
// canonical too and cleared when nothing is left in it.
void Canonicalize(google::protobuf::Message* m) {
  const auto* d = m->GetDescriptor();
  const auto* r = m->GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (f->is_repeated() || !r->HasField(*m, f)) continue;
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      google::protobuf::Message* inner = r->MutableMessage(m, f);
      Canonicalize(inner);
      if (inner->ByteSizeLong() == 0) r->ClearField(m, f);
    } else if (AtDefault(*m, f)) {
      r->ClearField(m, f);
    }
  }
}

}  // namespace

std::string CanonicalJobConfig(const proto::JobConfig& job) {
  proto::JobConfig c = job;
  c.DiscardUnknownFields();
  if (c.has_spec()) c.mutable_spec()->clear_data_dir();
  c.clear_artifacts();  // how the files travel, not what is learned: model_blake2b names the model
  Canonicalize(&c);
  // Deterministic serialization writes the known fields in number order.
  std::string out;
  {
    google::protobuf::io::StringOutputStream stream(&out);
    google::protobuf::io::CodedOutputStream coded(&stream);
    coded.SetSerializationDeterministic(true);
    MURMUR_CHECK(c.SerializeToCodedStream(&coded));
  }
  return out;
}

std::uint64_t JobTag(const proto::JobConfig& job) {
  const std::string canonical = CanonicalJobConfig(job);
  const crypto::Hash h = crypto::Blake2b(
      {crypto::ByteSpan(reinterpret_cast<const std::uint8_t*>(kTagDomain), sizeof(kTagDomain)),
       crypto::ByteSpan(reinterpret_cast<const std::uint8_t*>(canonical.data()), canonical.size())});
  std::uint64_t tag = 0;
  for (std::size_t i = 0; i < 8; ++i) tag |= std::uint64_t{h[i]} << (8 * i);
  return tag;
}

JobMessage::JobMessage(std::uint64_t tag, MessagePtr inner) : tag_(tag), inner_(std::move(inner)) {
  MURMUR_CHECK(inner_ != nullptr);
  MURMUR_CHECK(inner_->kind() != kJobMessageKind);
}

void JobMessage::EncodeTo(std::vector<std::uint8_t>& out) const {
  crypto::AppendU32(&out, inner_->kind());
  crypto::AppendU64(&out, tag_);
  inner_->EncodeTo(out);
}

Result<std::shared_ptr<const JobMessage>> DecodeJobMessage(
    std::span<const std::uint8_t> bytes,
    const std::function<const MessageDecoder*(std::uint32_t)>& decoder_of) {
  crypto::ByteReader r(bytes);
  crypto::ByteSpan kind_bytes;
  std::uint64_t tag = 0;
  if (!r.ReadSpan(4, &kind_bytes) || !r.ReadU64(&tag))
    return Status::DataLoss("job message of " + std::to_string(bytes.size()) +
                            " bytes is shorter than its 12-byte header");
  const std::uint32_t kind = crypto::LoadU32(kind_bytes.data());
  if (kind == kJobMessageKind)
    return Status::DataLoss("job message wraps kind " + std::to_string(kind) +
                            ", which is not a job message");
  const MessageDecoder* decode = decoder_of(kind);
  if (decode == nullptr)
    return Status::InvalidArgument("job message wraps unknown kind " + std::to_string(kind));
  MURMUR_ASSIGN_OR_RETURN(MessagePtr inner, (*decode)(bytes.subspan(kJobMessageHeaderSize)));
  return std::make_shared<const JobMessage>(tag, std::move(inner));
}

}  // namespace murmur::node
