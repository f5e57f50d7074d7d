// How `murmur sim --model-digests` and `murmur job status --model-digests`
// print the models' digests (crypto::ModelBlake2b, first 16 hex digits), in
// one format, so that a fleet's line can be compared with the simulator's
// as text: equal lines mean equal models, bit for bit.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace murmur::cli {

// "model digests: node 0 1a2b3c4d5e6f7a8b, node 1 ...", nodes in the order given.
inline std::string ModelDigestsLine(const std::vector<std::pair<std::uint32_t, std::string>>& digests) {
  std::string out = "model digests:";
  for (std::size_t i = 0; i < digests.size(); ++i)
    out += (i == 0 ? " node " : ", node ") + std::to_string(digests[i].first) + " " +
           digests[i].second.substr(0, 16);
  return out;
}

// "global model digest 1a2b3c4d5e6f7a8b".
inline std::string GlobalModelDigestLine(const std::string& digest) {
  return "global model digest " + digest.substr(0, 16);
}

}  // namespace murmur::cli
