// murmur fault set|clear: inject network faults into running daemons
// (docs/security.md "Fault injection", docs/daemon.md "Operator commands").
// Each daemon must have been started with `fault_injection: true`; it then
// applies the faults to every message it sends until they are replaced or
// cleared. A partition cuts both ways only when every daemon of both groups
// gets it, so name the whole fleet (--cluster).
#include <cstdio>
#include <string>

#include "apps/murmur/command.h"
#include "apps/murmur/operator.h"
#include "engine/faults.h"

namespace murmur::cli {
namespace {

constexpr const char* kName = "fault";

const char* kUsage =
    "usage: murmur fault <action> [options]   (murmur fault <action> --help)\n\n"
    "actions:\n"
    "  set     replace every daemon's injected faults (drop, delay, duplicate, reorder, corrupt, partition)\n"
    "  clear   stop injecting faults on every daemon\n";

int Send(const OperatorContext& ctx, const proto::ControlRequest& request) {
  int bad = 0;
  for (const DaemonReply& r : CallAll(ctx, request)) {
    if (!r.response.ok() || !r.response->ok()) {
      std::printf("%-22s refused: %s\n", r.address.c_str(),
                  r.response.ok() ? r.response->error().c_str() : r.response.status().message().c_str());
      ++bad;
      continue;
    }
    std::printf("%-22s node %-4u faults: %s\n", r.address.c_str(), r.response->node_id(),
                r.response->faults().c_str());
  }
  if (bad > 0)
    return Failure(kName, std::to_string(bad) + " of " + std::to_string(ctx.daemons.size()) +
                              " daemons did not take the faults");
  return kExitOk;
}

int Set(int argc, char** argv) {
  cxxopts::Options options("murmur fault set",
                           "replace the faults every daemon injects into the messages it sends");
  AddOperatorOptions(options);
  // clang-format off
  options.add_options("faults")
    ("drop", "probability that a message is lost, in [0, 1)", cxxopts::value<double>())
    ("duplicate", "probability that a message is delivered twice", cxxopts::value<double>())
    ("reorder", "probability that a message is overtaken by the next one to the same peer", cxxopts::value<double>())
    ("corrupt", "probability that a message's bytes are damaged", cxxopts::value<double>())
    ("delay", "seconds added to every message", cxxopts::value<double>())
    ("jitter", "plus U[0, jitter) seconds", cxxopts::value<double>())
    ("partition", "groups of node ids, e.g. '0-3|4-7': no message between groups until cleared",
     cxxopts::value<std::string>());
  options.add_options()("h,help", "show this help");
  // clang-format on
  cxxopts::ParseResult args;
  if (auto rc = ParseFlags(options, argc, argv, kName, &args)) return *rc;
  proto::ControlRequest request;
  proto::FaultConfig& f = *request.mutable_fault_set()->mutable_faults();
  if (args.count("drop")) f.set_drop(args["drop"].as<double>());
  if (args.count("duplicate")) f.set_duplicate(args["duplicate"].as<double>());
  if (args.count("reorder")) f.set_reorder(args["reorder"].as<double>());
  if (args.count("corrupt")) f.set_corrupt(args["corrupt"].as<double>());
  if (args.count("delay")) f.set_delay(args["delay"].as<double>());
  if (args.count("jitter")) f.set_delay_jitter(args["jitter"].as<double>());
  if (args.count("partition")) f.set_partition(args["partition"].as<std::string>());
  if (Status st = engine::ValidateFaults(f, engine::kMaxFaultNodeId, engine::FaultTime::kUntilCleared);
      !st.ok())
    return UsageError(kName, st.message());
  auto ctx = LoadOperatorContext(args);
  if (!ctx.ok()) return UsageError(kName, ctx.status().message());
  return Send(*ctx, request);
}

int Clear(int argc, char** argv) {
  cxxopts::Options options("murmur fault clear", "stop injecting faults on every daemon");
  AddOperatorOptions(options);
  options.add_options()("h,help", "show this help");
  cxxopts::ParseResult args;
  if (auto rc = ParseFlags(options, argc, argv, kName, &args)) return *rc;
  auto ctx = LoadOperatorContext(args);
  if (!ctx.ok()) return UsageError(kName, ctx.status().message());
  proto::ControlRequest request;
  request.mutable_fault_clear();
  return Send(*ctx, request);
}

int RunFault(int argc, char** argv) {
  return DispatchAction(kName, kUsage, "set or clear", {{"set", Set}, {"clear", Clear}}, argc, argv);
}

}  // namespace

MURMUR_COMMAND("fault", "inject network faults into running daemons (set, clear)", RunFault);

}  // namespace murmur::cli
