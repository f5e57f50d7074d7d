// The decoders of every message kind a daemon's jobs send and receive
// (core/message_decoder.h): gossip (0x01), federated task/result, SecAgg+,
// federated job control, and the JobMessage (0x30) that wraps each of them
// with its job's tag (node/job/job_message.h). The daemon registers this
// table on its AsioEnv, and tests that run the algorithms over AsioEnv
// without the job layer register it too.
//
// Thread-safety: the table is a value; its decoders keep no state.
#pragma once

#include "compression/update.h"
#include "core/message_decoder.h"

namespace murmur::node {

// `limits` bounds what a gossip or federated update may claim (sizes are
// checked before anything is allocated).
DecoderTable JobDecoders(const compression::DecodeLimits& limits = {});

}  // namespace murmur::node
