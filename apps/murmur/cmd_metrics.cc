// murmur metrics: each daemon's Prometheus metrics, fetched over the secure
// control port (the daemon's own /metrics endpoint listens on loopback only).
#include <cstdio>

#include "apps/murmur/command.h"
#include "apps/murmur/operator.h"

namespace murmur::cli {
namespace {

int RunMetrics(int argc, char** argv) {
  cxxopts::Options options("murmur metrics", "each daemon's Prometheus metrics (text exposition format)");
  AddOperatorOptions(options);
  options.add_options()("h,help", "show this help");
  cxxopts::ParseResult args;
  if (auto rc = ParseFlags(options, argc, argv, "metrics", &args)) return *rc;
  auto ctx = LoadOperatorContext(args);
  if (!ctx.ok()) return UsageError("metrics", ctx.status().message());
  proto::ControlRequest request;
  request.mutable_metrics();
  int bad = 0;
  for (const DaemonReply& r : CallAll(*ctx, request)) {
    if (!r.response.ok() || !r.response->ok()) {
      std::printf("# daemon %s: %s\n", r.address.c_str(),
                  r.response.ok() ? r.response->error().c_str() : r.response.status().message().c_str());
      ++bad;
      continue;
    }
    std::printf("# daemon %s, node %u\n%s", r.address.c_str(), r.response->node_id(),
                r.response->metrics().c_str());
  }
  return bad > 0 ? kExitFailure : kExitOk;
}

}  // namespace

MURMUR_COMMAND("metrics", "print each daemon's Prometheus metrics", RunMetrics);

}  // namespace murmur::cli
