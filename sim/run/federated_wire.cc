#include "sim/run/federated_wire.h"

#include "compression/update.h"
#include "federated/messages.h"
#include "federated/secagg_messages.h"

namespace murmur::sim {

// Decodes what federated nodes send each other (tasks, results, SecAgg+), as
// murmurd's job decoders do, for the messages that cross ranks.
WireDecoder FederatedWireDecoder() {
  return [](std::uint32_t kind, std::span<const std::uint8_t> bytes) -> Result<MessagePtr> {
    if (kind == federated::kFedMessageKind) {
      MURMUR_ASSIGN_OR_RETURN(auto m, federated::FedMessage::Decode(bytes, compression::DecodeLimits{}));
      return MessagePtr(std::move(m));
    }
    if (kind == federated::kSecAggMessageKind) {
      MURMUR_ASSIGN_OR_RETURN(auto m, federated::SecAggMessage::Decode(bytes));
      return MessagePtr(std::move(m));
    }
    return Status::InvalidArgument("federated message of unknown kind " + std::to_string(kind));
  };
}

// An evaluation point's numbers as bytes, for the rank of the server to share.
Bytes PackPoint(const EvalPoint& p) {
  // Sized first: GCC 12 misreads an insert into an empty vector here as an
  // overflow (-Wstringop-overflow, a false positive).
  Bytes b(11 * sizeof(double) + 5 * sizeof(std::uint64_t));
  b.clear();
  const double d[11] = {p.virtual_s, p.wall_s,   p.acc_mean,   p.acc_min,   p.acc_max, p.loss_mean,
                        p.avg_acc,   p.avg_loss, p.train_loss, p.consensus, p.epsilon};
  const std::uint64_t u[5] = {p.round, p.bytes_sent, p.bytes_received, p.messages_lost, p.online};
  PutValues<double>(b, d);
  PutValues<std::uint64_t>(b, u);
  return b;
}

EvalPoint UnpackPoint(const Bytes& b) {
  ByteReader in(b);
  EvalPoint p;
  for (double* f : {&p.virtual_s, &p.wall_s, &p.acc_mean, &p.acc_min, &p.acc_max, &p.loss_mean, &p.avg_acc,
                    &p.avg_loss, &p.train_loss, &p.consensus, &p.epsilon})
    *f = in.Get<double>();
  p.round = in.Get<std::uint64_t>();
  p.bytes_sent = in.Get<std::uint64_t>();
  p.bytes_received = in.Get<std::uint64_t>();
  p.messages_lost = in.Get<std::uint64_t>();
  p.online = static_cast<std::uint32_t>(in.Get<std::uint64_t>());
  return p;
}

}  // namespace murmur::sim
