// The murmur CLI's subcommand registry.
//
// Each subcommand lives in its own cmd_<name>.cc and registers itself with
// MURMUR_COMMAND; main.cc only dispatches. A command returns the process exit
// code: 0 success, 1 failure while running, 2 bad usage (unknown flag, bad value).
#pragma once

#include <initializer_list>
#include <map>
#include <optional>
#include <string>

#include <cxxopts.hpp>

namespace murmur::cli {

using CommandFn = int (*)(int argc, char** argv);

struct Command {
  std::string summary;
  CommandFn run;
};

std::map<std::string, Command>& Commands();

struct CommandRegistration {
  CommandRegistration(const char* name, const char* summary, CommandFn fn) {
    Commands()[name] = Command{summary, fn};
  }
};

// Exit codes shared by every subcommand.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

// Prints "murmur <command>: <message>" to stderr and returns kExitUsage.
int UsageError(const std::string& command, const std::string& message);
// Prints "murmur <command>: <message>" to stderr and returns kExitFailure.
int Failure(const std::string& command, const std::string& message);

// Parses a subcommand's flags into `*out`. Returns the exit code when the
// command should stop here: kExitOk after printing --help (an option named
// "help" must exist), kExitUsage after a one-line error for an unknown flag,
// a bad value or a stray argument; nullopt to go on.
std::optional<int> ParseFlags(cxxopts::Options& options, int argc, char** argv, const std::string& command,
                              cxxopts::ParseResult* out);

// A command with actions (`murmur cert issue`, `murmur job submit`): prints
// `usage` for no action or --help, else runs the named action with argv[0] =
// "murmur <command> <action>"; an unknown action is a usage error listing
// `known` ("issue, show or verify").
struct Action {
  const char* name;
  CommandFn run;
};
int DispatchAction(const char* command, const char* usage, const char* known,
                   std::initializer_list<Action> actions, int argc, char** argv);

}  // namespace murmur::cli

#define MURMUR_COMMAND(name, summary, fn) \
  static ::murmur::cli::CommandRegistration murmur_command_registration_##fn(name, summary, fn)
