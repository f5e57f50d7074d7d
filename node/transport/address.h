// Transport addresses as configs and cluster files write them: a numeric
// host and a port, "127.0.0.1:7001" or "[::1]:7001".
//
// Thread-safety: free functions without shared state.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"

namespace murmur::node {

struct HostPort {
  std::string host;  // numeric, without brackets
  std::uint16_t port = 0;
};
// "127.0.0.1:7001" or "[::1]:7001". InvalidArgument otherwise.
Result<HostPort> ParseHostPort(const std::string& text);

}  // namespace murmur::node
