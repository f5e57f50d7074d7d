// JobMessage: how a daemon's job messages carry the identity of their job
// (docs/protocol.md, section 7.3 "Job messages"). Every message a job sends
// (gossip, federated task or result, SecAgg+, federated job control) goes
// through its JobEnv, which wraps it in a JobMessage: a transport message of
// kind 0x30 whose payload is
//
//   u32 inner kind || 8 bytes job tag || the inner message's bytes
//
// The job tag is the same on every daemon of a job, and differs between jobs
// of different ids or configurations (JobTag below). The receiving daemon
// (node/job/job_router.h) hands the inner message to its running job only when
// the tag is that job's, so that a stopped job's late messages, or an earlier
// job's with the same round numbers, never mix into another job.
// Membership (0x11) is not a job message and is never wrapped.
//
// The simulator and the nodes tests run over AsioEnv directly never wrap:
// the inner kinds keep their own decoders, and the tag is a daemon matter.
//
// Thread-safety: immutable after construction; JobTag is a pure function.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/env.h"
#include "core/message_decoder.h"
#include "core/status.h"
#include "proto/node.pb.h"

namespace murmur::node {

inline constexpr std::uint32_t kJobMessageKind = 0x30;
inline constexpr std::size_t kJobMessageHeaderSize = 4 + 8;

// The bytes JobTag hashes: the JobConfig's protobuf binary encoding, fields in
// increasing number order, holding only the fields whose value differs from
// the field's declared default, the embedded `spec` encoded by the same rule
// (without `data_dir`, a path that may differ from daemon to daemon) and left
// out when none of its fields differs, and without unknown fields. So a field
// written out at its default, or a new field a job leaves at its default,
// changes nothing.
std::string CanonicalJobConfig(const proto::JobConfig& job);

// The job's tag: the first 8 bytes of BLAKE2b-512 (unkeyed) over the 18 bytes
// "murmur-job-tag-v1" || 0x00 followed by CanonicalJobConfig(job), read as a
// little-endian u64 (so it goes on the wire as those 8 bytes, in order).
std::uint64_t JobTag(const proto::JobConfig& job);

class JobMessage final : public Message {
 public:
  // REQUIRES: inner is not null and not a JobMessage.
  JobMessage(std::uint64_t tag, MessagePtr inner);

  std::uint32_t kind() const override { return kJobMessageKind; }
  std::size_t EncodedSize() const override { return kJobMessageHeaderSize + inner_->EncodedSize(); }
  void EncodeTo(std::vector<std::uint8_t>& out) const override;

  std::uint64_t tag() const { return tag_; }
  const MessagePtr& inner() const { return inner_; }

 private:
  std::uint64_t tag_;
  MessagePtr inner_;
};

// Decodes a kind-0x30 payload. DataLoss when it is shorter than its 12-byte
// header or wraps kind 0x30; InvalidArgument naming the kind when
// `decoder_of` (the decoder of an inner kind, or null when the kind is
// unknown) has none for it, as for membership (0x11), which is never wrapped;
// the inner decoder's error otherwise.
Result<std::shared_ptr<const JobMessage>> DecodeJobMessage(
    std::span<const std::uint8_t> bytes,
    const std::function<const MessageDecoder*(std::uint32_t)>& decoder_of);

}  // namespace murmur::node
