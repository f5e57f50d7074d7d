// Transport addresses as configs and cluster files write them: a numeric
// host and a port, "127.0.0.1:7001" or "[::1]:7001".
//
// Thread-safety: free functions without shared state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/env.h"
#include "core/status.h"
#include "node/transport/asio.h"

namespace murmur::node {

struct HostPort {
  std::string host;  // numeric, without brackets
  std::uint16_t port = 0;
};
// "127.0.0.1:7001" or "[::1]:7001". InvalidArgument otherwise.
Result<HostPort> ParseHostPort(const std::string& text);
// The address a daemon states in membership (docs/protocol.md section 7.4):
// "HOST:PORT", then optionally ";relay" (it relays for others, and its
// probes found it reachable) and ";relays=R1,R2" (the relays it keeps
// sessions with: at most kMaxRelays node ids, decimal), in that order.
inline constexpr std::size_t kMaxRelays = 8;
struct MemberAddress {
  HostPort at;
  bool offers_relay = false;
  std::vector<NodeId> relays;
};
Result<MemberAddress> ParseMemberAddress(const std::string& text);
std::string FormatMemberAddress(const HostPort& at, const std::vector<NodeId>& relays,
                                bool offers_relay = false);
// "127.0.0.1:7001" or "[::1]:7001".
std::string FormatHostPort(const HostPort& at);

// A numeric IPv4 or IPv6 address. InvalidArgument otherwise.
Result<asio::ip::address> ParseAddress(const std::string& host);

}  // namespace murmur::node
