#include "node/transport/address.h"

namespace murmur::node {

Result<HostPort> ParseHostPort(const std::string& text) {
  HostPort hp;
  std::string port;
  if (!text.empty() && text[0] == '[') {
    const auto close = text.find("]:");
    if (close == std::string::npos) return Status::InvalidArgument("address '" + text + "' lacks ']:PORT'");
    hp.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string::npos || text.find(':') != colon)
      return Status::InvalidArgument("address '" + text + "' is not HOST:PORT (write IPv6 as [ADDR]:PORT)");
    hp.host = text.substr(0, colon);
    port = text.substr(colon + 1);
  }
  // A bracket in a host name could not be written back in the same form ("[[]:1" would read as
  // host "[", which formats as "[:1"), and no IPv4, IPv6 or DNS name holds one.
  if (hp.host.find_first_of("[]") != std::string::npos)
    return Status::InvalidArgument("address '" + text + "' has a bracket inside its host");
  if (hp.host.empty() || port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoul(port) > 65535) {
    return Status::InvalidArgument("address '" + text + "' has no valid port");
  }
  hp.port = static_cast<std::uint16_t>(std::stoul(port));
  return hp;
}

std::string FormatHostPort(const HostPort& at) {
  return at.host.find(':') != std::string::npos ? "[" + at.host + "]:" + std::to_string(at.port)
                                                : at.host + ":" + std::to_string(at.port);
}

std::string FormatMemberAddress(const HostPort& at, const std::vector<NodeId>& relays, bool offers_relay) {
  std::string out = FormatHostPort(at);
  if (offers_relay) out += ";relay";
  for (std::size_t i = 0; i < relays.size(); ++i)
    out += (i == 0 ? ";relays=" : ",") + std::to_string(relays[i]);
  return out;
}

Result<MemberAddress> ParseMemberAddress(const std::string& text) {
  MemberAddress out;
  auto semi = text.find(';');
  MURMUR_ASSIGN_OR_RETURN(out.at, ParseHostPort(text.substr(0, semi)));
  std::string rest = semi == std::string::npos ? "" : text.substr(semi + 1);
  if (semi != std::string::npos && rest.empty())
    return Status::InvalidArgument("address '" + text + "': nothing after ';'");
  if (rest == "relay" || rest.compare(0, 6, "relay;") == 0) {
    out.offers_relay = true;
    rest = rest.size() > 5 ? rest.substr(6) : "";
    if (text.back() == ';') return Status::InvalidArgument("address '" + text + "': nothing after ';'");
  }
  if (rest.empty()) return out;
  const std::string key = "relays=";
  if (rest.compare(0, key.size(), key) != 0 || rest.size() == key.size())
    return Status::InvalidArgument("address '" + text +
                                   "': after ';' only 'relay' and 'relays=ID,...' are known");
  std::size_t at = key.size();
  while (at <= rest.size()) {
    const auto comma = rest.find(',', at);
    const std::string id = rest.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (id.empty() || id.size() > 10 || id.find_first_not_of("0123456789") != std::string::npos ||
        std::stoull(id) >= kNoNode)
      return Status::InvalidArgument("address '" + text + "': relay '" + id + "' is not a node id");
    if (out.relays.size() == kMaxRelays)
      return Status::InvalidArgument("address '" + text + "': more than " + std::to_string(kMaxRelays) +
                                     " relays");
    out.relays.push_back(static_cast<NodeId>(std::stoull(id)));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

Result<asio::ip::address> ParseAddress(const std::string& host) {
  asio::error_code ec;
  asio::ip::address a = asio::ip::make_address(host, ec);
  if (ec) return Status::InvalidArgument("address '" + host + "' is not a numeric IPv4 or IPv6 address");
  return a;
}

}  // namespace murmur::node
