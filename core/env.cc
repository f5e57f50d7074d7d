#include "core/env.h"

namespace murmur {

const char* RefusalName(Refusal why) {
  switch (why) {
    case Refusal::kWrongLength: return "wrong_length";
    case Refusal::kWrongEncoding: return "wrong_encoding";
    case Refusal::kNotFinite: return "not_finite";
    case Refusal::kImplausible: return "implausible";
    case Refusal::kNotAggregator: return "not_aggregator";
    case Refusal::kBadShares: return "bad_shares";
  }
  return "unknown";
}

}  // namespace murmur
