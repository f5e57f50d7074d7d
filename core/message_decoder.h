// MessageDecoder: turns the payload bytes of one message kind back into a
// Message. A real Env (node/transport/asio_env.h) looks the decoder up by the
// kind the transport carried; whoever runs a protocol registers its decoders
// (the daemon's job layer its gossip and federated kinds, the daemon its
// membership kind), so the transport knows no protocol.
//
// A decoder gets untrusted bytes: it returns a Status naming what is wrong,
// never aborts, and never allocates from a length it has not checked.
//
// Thread-safety: decoders are called on the Env's executor; a table is a value.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <span>

#include "core/env.h"
#include "core/status.h"

namespace murmur {

using MessageDecoder = std::function<Result<MessagePtr>(std::span<const std::uint8_t>)>;
using DecoderTable = std::map<std::uint32_t, MessageDecoder>;

}  // namespace murmur
