// What crosses ranks in a federated run spread over processes: the federated
// messages (tasks, results, SecAgg+), decoded as murmurd's job decoders do,
// and the server rank's evaluation points, packed for the other ranks.
//
// Thread-safety: pure functions.
#pragma once

#include "core/corrupted_message.h"
#include "sim/ranks/ranks.h"
#include "sim/run/run_summary.h"

namespace murmur::sim {

// Decodes FedMessage and SecAggMessage by their kind.
WireDecoder FederatedWireDecoder();

// An evaluation point's numbers as bytes, and back (UnpackPoint(PackPoint(p)) == p).
Bytes PackPoint(const EvalPoint& p);
EvalPoint UnpackPoint(const Bytes& b);

}  // namespace murmur::sim
