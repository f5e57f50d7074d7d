#include "apps/murmur/operator.h"

#include <fstream>
#include <map>
#include <sstream>
#include <utility>

#include "crypto/certificate.h"
#include "crypto/file_io.h"
#include "crypto/identity.h"
#include "node/control/client.h"

namespace murmur::cli {

void AddOperatorOptions(cxxopts::Options& options) {
  // clang-format off
  options.add_options("daemons")
    ("daemon", "a daemon's control address HOST:PORT, or NODE@HOST:PORT: node NODE behind NAT, through its relay whose control address that is (repeat the flag for more)", cxxopts::value<std::vector<std::string>>())
    ("cluster", "file listing daemons' control addresses, one HOST:PORT or NODE@HOST:PORT per line ('#' comments)", cxxopts::value<std::string>())
    ("identity", "the operator's identity.key", cxxopts::value<std::string>())
    ("cert", "the operator's certificate (roles must include operator)", cxxopts::value<std::string>())
    ("coordinator-key", "the coordinator's identity.pub, or its 64 hex digits", cxxopts::value<std::string>())
    ("timeout", "seconds to wait for each daemon", cxxopts::value<double>()->default_value("10"));
  // clang-format on
}

Result<OperatorContext> LoadOperatorContext(const cxxopts::ParseResult& args) {
  for (const char* required : {"identity", "cert", "coordinator-key"})
    if (!args.count(required)) return Status::InvalidArgument(std::string("missing --") + required);
  OperatorContext ctx;
  if (args.count("daemon")) ctx.daemons = args["daemon"].as<std::vector<std::string>>();
  if (args.count("cluster")) {
    const std::string path = args["cluster"].as<std::string>();
    auto text = crypto::ReadSmallFile(path, std::size_t{1} << 20);
    if (!text.ok()) return text.status().WithContext("--cluster");
    std::istringstream in(*text);
    std::string line;
    while (std::getline(in, line)) {
      line = line.substr(0, line.find('#'));
      const auto b = line.find_first_not_of(" \t\r");
      if (b == std::string::npos) continue;
      ctx.daemons.push_back(line.substr(b, line.find_last_not_of(" \t\r") - b + 1));
    }
  }
  if (ctx.daemons.empty()) return Status::InvalidArgument("name the daemons with --daemon or --cluster");
  const double timeout = args["timeout"].as<double>();
  if (!(timeout > 0 && timeout <= 3600))
    return Status::InvalidArgument("--timeout must be in (0, 3600] seconds");
  ctx.timeout_ms = static_cast<int>(timeout * 1000);

  const std::string key_path = args["identity"].as<std::string>();
  const std::string cert_path = args["cert"].as<std::string>();
  MURMUR_ASSIGN_OR_RETURN(crypto::Identity identity, crypto::Identity::LoadKeyFile(key_path));
  MURMUR_ASSIGN_OR_RETURN(crypto::Certificate cert, crypto::LoadCertificateFile(cert_path));
  if (!cert.HasRoles(crypto::kRoleOperator))
    return Status::PermissionDenied("certificate '" + cert_path + "' has roles " +
                                    crypto::RolesToString(cert.roles) +
                                    "; operator commands need the operator role");
  const std::string coord = args["coordinator-key"].as<std::string>();
  MURMUR_ASSIGN_OR_RETURN(crypto::SignPublicKey coordinator, crypto::PublicKeyFromArg(coord));
  auto creds = crypto::Credentials::Make(identity, cert);
  if (!creds.ok()) return creds.status().WithContext("certificate '" + cert_path + "'");
  ctx.credentials = std::move(creds).value();
  ctx.policy = crypto::TrustPolicy{cert.network_id, coordinator, crypto::kRoleNode};
  return ctx;
}

std::vector<DaemonReply> CallAll(const OperatorContext& ctx, const proto::ControlRequest& request) {
  std::vector<DaemonReply> out;
  for (const std::string& address : ctx.daemons) {
    out.push_back(DaemonReply{address, node::CallDaemon(address, *ctx.credentials, ctx.policy, request,
                                                        std::chrono::milliseconds(ctx.timeout_ms))});
  }
  return out;
}

std::vector<MeasuredPair> MeasuredPairs(const std::vector<DaemonReply>& replies) {
  std::map<std::pair<std::uint32_t, std::uint32_t>, const proto::PeerStatus*> seen;
  for (const DaemonReply& r : replies) {
    if (!r.response.ok() || !r.response->ok()) continue;
    for (const auto& p : r.response->peers()) seen[{r.response->node_id(), p.id()}] = &p;
  }
  std::vector<MeasuredPair> out;
  for (const auto& [pair, p] : seen) {
    if (p->rtt_ms() <= 0) continue;
    auto back = seen.find({pair.second, pair.first});
    out.push_back({pair.first, pair.second, p->rtt_ms(), back == seen.end() ? 0.0 : back->second->mbps_in()});
  }
  return out;
}

}  // namespace murmur::cli
