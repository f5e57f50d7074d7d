// murmur cert issue|show|verify|reload: node certificates signed by a
// network's coordinator key (format in docs/protocol.md, "Certificates"), and
// telling running daemons to take a renewed one (docs/daemon.md "Certificate
// renewal").
#include <sodium.h>

#include <cstdio>
#include <ctime>
#include <string>

#include <cxxopts.hpp>

#include "apps/murmur/command.h"
#include "apps/murmur/operator.h"
#include "crypto/certificate.h"
#include "crypto/identity.h"

namespace murmur::cli {
namespace {

constexpr const char* kName = "cert";
constexpr std::int64_t kMaxDays = 36500;

const char* kUsage =
    "usage: murmur cert <action> [options]   (murmur cert <action> --help)\n\n"
    "actions:\n"
    "  issue    sign a node certificate with the coordinator key\n"
    "  show     print a certificate's fields\n"
    "  verify   check a certificate against a coordinator key, network and the clock\n"
    "  reload   make running daemons read their certificate file again (as SIGHUP)\n";

// Parses argv with `options`; returns -1 to continue, else the exit code.
int Parse(cxxopts::Options& options, int argc, char** argv, cxxopts::ParseResult* args) {
  try {
    *args = options.parse(argc, argv);
    if (!args->unmatched().empty())
      return UsageError(kName, "unexpected argument '" + args->unmatched()[0] + "'");
  } catch (const cxxopts::exceptions::exception& e) {
    return UsageError(kName, e.what());
  }
  if (args->count("help")) {
    std::printf("%s\n", options.help().c_str());
    return kExitOk;
  }
  return -1;
}

std::string FormatTime(std::int64_t t) {
  std::time_t tt = static_cast<std::time_t>(t);
  std::tm tm{};
  char buf[64];
  if (gmtime_r(&tt, &tm) == nullptr || std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
    return std::to_string(t);
  return std::to_string(t) + " (" + buf + ")";
}

// "3", or why there is none.
std::string NodeIdText(const crypto::Certificate& cert) {
  if (cert.BindsNodeId()) return std::to_string(cert.node_id);
  return cert.version == crypto::kLegacyCertificateVersion
             ? "none (version 1: accepted only where the key is pinned)"
             : "none";
}

int Issue(int argc, char** argv) {
  cxxopts::Options options("murmur cert issue",
                           "Sign a node certificate with the network's coordinator key.");
  // clang-format off
  options.add_options()
    ("coordinator-key", "coordinator secret key file (identity.key)", cxxopts::value<std::string>())
    ("node-pub", "node public key: 64 hex digits or an identity.pub file", cxxopts::value<std::string>())
    ("network", "network id (1-64 of A-Z a-z 0-9 . _ -)", cxxopts::value<std::string>())
    ("node-id", "the node id the certificate binds to the key (required for the node and aggregator roles)", cxxopts::value<std::uint32_t>())
    ("roles", "comma-separated roles: node, aggregator, operator", cxxopts::value<std::string>()->default_value("node"))
    ("days", "validity in days from --not-before", cxxopts::value<std::int64_t>())
    ("not-before", "start of validity, Unix seconds (default: now)", cxxopts::value<std::int64_t>())
    ("serial", "serial number (default: random)", cxxopts::value<std::uint64_t>())
    ("out", "certificate file to write", cxxopts::value<std::string>())
    ("h,help", "show this help");
  // clang-format on
  cxxopts::ParseResult args;
  if (int rc = Parse(options, argc, argv, &args); rc >= 0) return rc;
  for (const char* required : {"coordinator-key", "node-pub", "network", "days", "out"})
    if (!args.count(required)) return UsageError(kName, std::string("issue: missing --") + required);
  const std::string network = args["network"].as<std::string>();
  if (Status s = crypto::ValidateNetworkId(network); !s.ok())
    return UsageError(kName, "--network: " + s.message());
  auto roles = crypto::ParseRoles(args["roles"].as<std::string>());
  if (!roles.ok()) return UsageError(kName, "--roles: " + roles.status().message());
  const bool needs_id = (*roles & (crypto::kRoleNode | crypto::kRoleAggregator)) != 0;
  if (needs_id && !args.count("node-id"))
    return UsageError(kName, "issue: roles " + crypto::RolesToString(*roles) +
                                 " need --node-id (the certificate binds the node id to the key)");
  if (args.count("node-id") && args["node-id"].as<std::uint32_t>() == crypto::kNoCertifiedNode)
    return UsageError(kName, "--node-id 4294967295 is reserved (no node)");
  const std::int64_t days = args["days"].as<std::int64_t>();
  if (days < 1 || days > kMaxDays)
    return UsageError(kName,
                      "--days must be in [1, " + std::to_string(kMaxDays) + "], got " + std::to_string(days));
  auto node = crypto::PublicKeyFromArg(args["node-pub"].as<std::string>());
  if (!node.ok()) return UsageError(kName, "--node-pub: " + node.status().message());
  auto coordinator = crypto::Identity::LoadKeyFile(args["coordinator-key"].as<std::string>());
  if (!coordinator.ok()) return Failure(kName, coordinator.status().message());

  crypto::Certificate cert;
  cert.node_key = *node;
  if (args.count("node-id")) cert.node_id = args["node-id"].as<std::uint32_t>();
  cert.network_id = network;
  cert.roles = *roles;
  cert.not_before = args.count("not-before") ? args["not-before"].as<std::int64_t>()
                                             : static_cast<std::int64_t>(std::time(nullptr));
  cert.not_after = cert.not_before + days * 86400;
  if (args.count("serial")) {
    cert.serial = args["serial"].as<std::uint64_t>();
  } else {
    crypto::EnsureSodium();
    randombytes_buf(&cert.serial, sizeof cert.serial);
  }
  if (Status s = crypto::SignCertificate(*coordinator, &cert); !s.ok()) return UsageError(kName, s.message());
  const std::string out = args["out"].as<std::string>();
  if (Status s = crypto::SaveCertificateFile(out, cert); !s.ok()) return Failure(kName, s.message());
  std::fprintf(stderr, "wrote %s: serial %llu, node %s, network %s, roles %s, valid until %s\n", out.c_str(),
               static_cast<unsigned long long>(cert.serial), NodeIdText(cert).c_str(), network.c_str(),
               crypto::RolesToString(cert.roles).c_str(), FormatTime(cert.not_after).c_str());
  return kExitOk;
}

int Show(int argc, char** argv) {
  cxxopts::Options options("murmur cert show",
                           "Print a certificate's fields (the signature is not checked).");
  options.add_options()("file", "certificate file", cxxopts::value<std::string>())("h,help",
                                                                                   "show this help");
  options.parse_positional({"file"});
  options.positional_help("FILE");
  cxxopts::ParseResult args;
  if (int rc = Parse(options, argc, argv, &args); rc >= 0) return rc;
  if (!args.count("file")) return UsageError(kName, "show: missing FILE");
  auto cert = crypto::LoadCertificateFile(args["file"].as<std::string>());
  if (!cert.ok()) return Failure(kName, cert.status().message());
  std::printf("version     %u\n", cert->version);
  std::printf("node key    %s\n", crypto::ToHex(cert->node_key).c_str());
  std::printf("node id     %s\n", NodeIdText(*cert).c_str());
  std::printf("network     %s\n", cert->network_id.c_str());
  std::printf("roles       %s\n", crypto::RolesToString(cert->roles).c_str());
  std::printf("serial      %llu\n", static_cast<unsigned long long>(cert->serial));
  std::printf("not before  %s\n", FormatTime(cert->not_before).c_str());
  std::printf("not after   %s\n", FormatTime(cert->not_after).c_str());
  std::printf("signature   %s\n", crypto::ToHex(cert->signature).c_str());
  return kExitOk;
}

int Verify(int argc, char** argv) {
  cxxopts::Options options("murmur cert verify",
                           "Check a certificate: coordinator signature, network, validity window.\n"
                           "Exit 0 when valid, 1 with the reason when not.");
  // clang-format off
  options.add_options()
    ("file", "certificate file", cxxopts::value<std::string>())
    ("coordinator-key", "coordinator public key: 64 hex digits or an identity.pub file (as the operator commands take it)", cxxopts::value<std::string>())
    ("coordinator-pub", "the same as --coordinator-key (its earlier name)", cxxopts::value<std::string>())
    ("network", "the network id the certificate must name", cxxopts::value<std::string>())
    ("at", "check validity at this Unix time (default: now)", cxxopts::value<std::int64_t>())
    ("h,help", "show this help");
  // clang-format on
  options.parse_positional({"file"});
  options.positional_help("FILE");
  cxxopts::ParseResult args;
  if (int rc = Parse(options, argc, argv, &args); rc >= 0) return rc;
  if (!args.count("file")) return UsageError(kName, "verify: missing FILE");
  const char* key_flag = args.count("coordinator-key") ? "coordinator-key" : "coordinator-pub";
  if (!args.count(key_flag)) return UsageError(kName, "verify: missing --coordinator-key");
  if (!args.count("network")) return UsageError(kName, "verify: missing --network");
  auto key = crypto::PublicKeyFromArg(args[key_flag].as<std::string>());
  if (!key.ok()) return UsageError(kName, std::string("--") + key_flag + ": " + key.status().message());
  auto cert = crypto::LoadCertificateFile(args["file"].as<std::string>());
  if (!cert.ok()) return Failure(kName, cert.status().message());
  const std::int64_t now =
      args.count("at") ? args["at"].as<std::int64_t>() : static_cast<std::int64_t>(std::time(nullptr));
  Status s = crypto::VerifyCertificate(*cert, *key, args["network"].as<std::string>(), now);
  if (!s.ok()) return Failure(kName, "invalid: " + s.message());
  std::printf("valid: node key %s, node id %s, network %s, roles %s, until %s\n",
              crypto::ToHex(cert->node_key).c_str(), NodeIdText(*cert).c_str(), cert->network_id.c_str(),
              crypto::RolesToString(cert->roles).c_str(), FormatTime(cert->not_after).c_str());
  return kExitOk;
}

int Reload(int argc, char** argv) {
  cxxopts::Options options("murmur cert reload",
                           "Make each daemon read its certificate file again and present the renewed\n"
                           "certificate from now on (as SIGHUP does). A daemon refuses a renewal that is\n"
                           "not the coordinator's, for another network, key or roles, or not valid now,\n"
                           "and keeps the certificate it has. Exit 0 when every daemon took it.");
  AddOperatorOptions(options);
  options.add_options()("h,help", "show this help");
  cxxopts::ParseResult args;
  if (auto rc = ParseFlags(options, argc, argv, kName, &args)) return *rc;
  auto ctx = LoadOperatorContext(args);
  if (!ctx.ok()) return UsageError(kName, ctx.status().message());
  proto::ControlRequest request;
  request.mutable_cert_reload();
  int bad = 0;
  for (const DaemonReply& r : CallAll(*ctx, request)) {
    if (!r.response.ok()) {
      std::printf("%-22s failed: %s\n", r.address.c_str(), r.response.status().message().c_str());
      ++bad;
      continue;
    }
    if (!r.response->ok()) {
      std::printf("%-22s node %-4u refused: %s; still presenting %s\n", r.address.c_str(),
                  r.response->node_id(), r.response->error().c_str(), r.response->certificate().c_str());
      ++bad;
      continue;
    }
    std::printf("%-22s node %-4u presenting %s\n", r.address.c_str(), r.response->node_id(),
                r.response->certificate().c_str());
  }
  if (bad > 0)
    return Failure(kName, std::to_string(bad) + " of " + std::to_string(ctx->daemons.size()) +
                              " daemons did not take a renewed certificate");
  return kExitOk;
}

}  // namespace

int RunCert(int argc, char** argv) {
  return DispatchAction(kName, kUsage, "issue, show, verify or reload",
                        {{"issue", Issue}, {"show", Show}, {"verify", Verify}, {"reload", Reload}}, argc,
                        argv);
}

MURMUR_COMMAND("cert", "issue, show and verify node certificates; reload them in daemons", RunCert);

}  // namespace murmur::cli
