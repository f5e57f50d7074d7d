// murmur keygen: create an Ed25519 identity (identity.key, identity.pub) in a
// directory and print its public key.

#include <cstdio>
#include <cstring>
#include <string>

#include <cxxopts.hpp>

#include <filesystem>

#include "apps/murmur/command.h"
#include "crypto/identity.h"

namespace murmur::cli {
namespace {
constexpr const char* kName = "keygen";
}  // namespace

int RunKeygen(int argc, char** argv) {
  cxxopts::Options options(
      "murmur keygen",
      "Create an Ed25519 identity: DIR/identity.key (secret, mode 0600) and\n"
      "DIR/identity.pub. Prints the public key in hex. A coordinator key is made the same way.");
  // clang-format off
  options.add_options()
    ("out", "directory for the key files (created if missing)", cxxopts::value<std::string>())
    ("force", "replace an existing identity.key")
    ("h,help", "show this help");
  // clang-format on
  cxxopts::ParseResult args;
  if (auto stop = ParseFlags(options, argc, argv, kName, &args)) return *stop;
  if (!args.count("out")) return UsageError(kName, "missing --out DIR");
  const std::string dir = args["out"].as<std::string>();
  if (dir.empty()) return UsageError(kName, "--out must not be empty");
  // Missing parents are created too; the key directory itself is private.
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Failure(kName, "cannot create " + dir + ": " + ec.message());
  std::filesystem::permissions(dir, std::filesystem::perms::owner_all, std::filesystem::perm_options::replace,
                               ec);
  crypto::Identity id = crypto::Identity::Generate();
  Status s = id.Save(dir, args.count("force") > 0);
  if (s.code() == StatusCode::kAlreadyExists) return Failure(kName, s.message() + " (use --force)");
  if (!s.ok()) return Failure(kName, s.message());
  std::printf("%s\n", id.PublicKeyHex().c_str());
  std::fprintf(stderr, "wrote %s/%s and %s/%s\n", dir.c_str(), crypto::kIdentityKeyFile, dir.c_str(),
               crypto::kIdentityPubFile);
  return kExitOk;
}

MURMUR_COMMAND("keygen", "create an Ed25519 identity (node or coordinator key)", RunKeygen);

}  // namespace murmur::cli
