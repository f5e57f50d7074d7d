// murmur::compression: compressed model updates for gossip and federated
// learning. Update (compression/update.h) is what travels, with an exact byte
// size and a validating decoder; Compressor (compression/compressor.h) makes
// one from a model delta with per-node error-feedback state; MakeCompressor
// builds one from a spec string. See docs/compression.md.
#pragma once

#include "compression/compressor.h"  // IWYU pragma: export
#include "compression/update.h"      // IWYU pragma: export
#include "compression/values.h"      // IWYU pragma: export
#include "compression/zstd_frame.h"  // IWYU pragma: export
