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
  if (hp.host.empty() || port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || std::stoul(port) > 65535) {
    return Status::InvalidArgument("address '" + text + "' has no valid port");
  }
  hp.port = static_cast<std::uint16_t>(std::stoul(port));
  return hp;
}

}  // namespace murmur::node
