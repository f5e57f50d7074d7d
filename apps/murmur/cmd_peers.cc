// murmur peers: each daemon's view of its peers (address, session, membership state).
#include <cstdio>
#include <vector>

#include "apps/murmur/command.h"
#include "apps/murmur/operator.h"

namespace murmur::cli {
namespace {

int RunPeers(int argc, char** argv) {
  cxxopts::Options options("murmur peers", "each daemon's peers: address, secure session, membership state");
  AddOperatorOptions(options);
  options.add_options()(
      "rtt-csv",
      "also write every measured round trip as from,to,rtt_ms,mbps rows to FILE, with the "
      "throughput from -> to where `to` timed it (0: not yet), for murmur topology --measured",
      cxxopts::value<std::string>())("h,help", "show this help");
  cxxopts::ParseResult args;
  if (auto rc = ParseFlags(options, argc, argv, "peers", &args)) return *rc;
  auto ctx = LoadOperatorContext(args);
  if (!ctx.ok()) return UsageError("peers", ctx.status().message());
  proto::ControlRequest request;
  request.mutable_peers();
  int bad = 0;
  const std::vector<DaemonReply> replies = CallAll(*ctx, request);
  for (const DaemonReply& r : replies) {
    if (!r.response.ok() || !r.response->ok()) {
      std::printf("%s: %s\n", r.address.c_str(),
                  r.response.ok() ? r.response->error().c_str() : r.response.status().message().c_str());
      ++bad;
      continue;
    }
    std::printf("node %u (%s): %d peers; %s\n", r.response->node_id(), r.address.c_str(),
                r.response->peers_size(),
                r.response->has_reachability() ? r.response->reachability().c_str() : "reachability unknown");
    std::printf("  %-5s %-22s %-10s %-11s %-11s %-9s %s\n", "id", "address", "session", "membership",
                "incarnation", "rtt ms", "Mbit/s in");
    for (const auto& p : r.response->peers()) {
      char rtt[32] = "-", in[32] = "-";
      if (p.rtt_ms() > 0) std::snprintf(rtt, sizeof(rtt), "%.3f", p.rtt_ms());
      if (p.mbps_in() > 0) std::snprintf(in, sizeof(in), "%.1f", p.mbps_in());
      std::printf("  %-5u %-22s %-10s %-11s %-11llu %-9s %s", p.id(),
                  p.address().empty() ? "-" : p.address().c_str(), p.connected() ? "up" : "down",
                  p.state().c_str(), static_cast<unsigned long long>(p.incarnation()), rtt, in);
      if (p.has_relay()) std::printf("  through relay %u", p.relay());
      if (p.has_unconnected())
        std::printf("  no session for %.0f s: %s", p.unconnected_s(), p.unconnected().c_str());
      std::printf("\n");
    }
  }
  std::string csv = "from,to,rtt_ms,mbps\n";
  for (const MeasuredPair& m : MeasuredPairs(replies)) {
    char row[96];
    std::snprintf(row, sizeof(row), "%u,%u,%.3f,%.3f\n", m.from, m.to, m.rtt_ms, m.mbps);
    csv += row;
  }
  if (args.count("rtt-csv")) {
    const std::string path = args["rtt-csv"].as<std::string>();
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (f == nullptr || std::fputs(csv.c_str(), f) < 0 || std::fclose(f) != 0)
      return Failure("peers", "cannot write --rtt-csv '" + path + "'");
  }
  return bad > 0 ? kExitFailure : kExitOk;
}

}  // namespace

MURMUR_COMMAND("peers", "list each daemon's peers and their state", RunPeers);

}  // namespace murmur::cli
