// murmur: the command-line tool. Dispatches to the subcommands registered in
// cmd_*.cc; see `murmur --help`.
#include <cstdio>
#include <cstring>
#include <string>

#include "apps/murmur/command.h"
#include "core/simd.h"
#include "node/cpu_features.h"

namespace murmur::cli {

std::map<std::string, Command>& Commands() {
  static std::map<std::string, Command> commands;
  return commands;
}

int UsageError(const std::string& command, const std::string& message) {
  std::fprintf(stderr, "murmur %s: %s\n", command.c_str(), message.c_str());
  return kExitUsage;
}

int Failure(const std::string& command, const std::string& message) {
  std::fprintf(stderr, "murmur %s: %s\n", command.c_str(), message.c_str());
  return kExitFailure;
}

std::optional<int> ParseFlags(cxxopts::Options& options, int argc, char** argv, const std::string& command,
                              cxxopts::ParseResult* out) {
  try {
    *out = options.parse(argc, argv);
  } catch (const cxxopts::exceptions::exception& e) {
    return UsageError(command, e.what());
  }
  if (!out->unmatched().empty())
    return UsageError(command, "unexpected argument '" + out->unmatched()[0] + "'");
  if (out->count("help")) {
    std::printf("%s\n", options.help().c_str());
    return kExitOk;
  }
  return std::nullopt;
}

int DispatchAction(const char* command, const char* usage, const char* known,
                   std::initializer_list<Action> actions, int argc, char** argv) {
  if (argc < 2) {
    std::fputs(usage, stderr);
    return kExitUsage;
  }
  const std::string action = argv[1];
  if (action == "--help" || action == "-h" || action == "help") {
    std::fputs(usage, stdout);
    return kExitOk;
  }
  // The action sees argv[0] = "murmur <command> <action>".
  std::string prog = std::string("murmur ") + command + " " + action;
  argv[1] = prog.data();
  for (const Action& a : actions)
    if (action == a.name) return a.run(argc - 1, argv + 1);
  return UsageError(command, "unknown action '" + action + "' (" + known + ")");
}

namespace {
void PrintHelp(std::FILE* out) {
  std::fprintf(out,
               "murmur: decentralized and federated learning for edge devices\n\n"
               "usage: murmur <command> [options]   (murmur <command> --help for its options)\n\n"
               "commands:\n");
  for (const auto& [name, cmd] : Commands())
    std::fprintf(out, "  %-10s %s\n", name.c_str(), cmd.summary.c_str());
}
}  // namespace

}  // namespace murmur::cli

int main(int argc, char** argv) {
  using namespace murmur::cli;
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
      std::strcmp(argv[1], "help") == 0) {
    PrintHelp(stdout);
    return argc < 2 ? kExitUsage : kExitOk;
  }
  if (std::strcmp(argv[1], "--version") == 0) {
    std::printf("murmur %s\n%s\n", MURMUR_VERSION, murmur::node::CpuFeaturesLine().c_str());
    return kExitOk;
  }
  // Every kernel level computes the same bits; MURMUR_SIMD picks a lower one
  // (to check exactly that, or to measure it).
  if (const murmur::Status s = murmur::CapSimdFromEnvironment(); !s.ok()) {
    std::fprintf(stderr, "murmur: %s\n", s.message().c_str());
    return kExitUsage;
  }
  murmur::PinEigenBlocking();
  auto it = Commands().find(argv[1]);
  if (it == Commands().end()) {
    std::fprintf(stderr, "murmur: unknown command '%s' (murmur --help lists them)\n", argv[1]);
    return kExitUsage;
  }
  // The subcommand sees argv[0] = "murmur <command>" and its own flags.
  std::string prog = std::string("murmur ") + argv[1];
  argv[1] = prog.data();
  return it->second.run(argc - 1, argv + 1);
}
