// murmurd: the murmur daemon. `murmurd --config FILE` runs the node and job
// that FILE (proto/node.proto's NodeConfig, text or JSON) describes; SIGTERM
// drains and exits 0; SIGHUP reloads the certificate file (a renewal). See
// docs/daemon.md.
#include <cxxopts.hpp>

#include <iostream>

#include "core/log.h"
#include "core/simd.h"
#include "node/config.h"
#include "node/cpu_features.h"
#include "node/daemon.h"

int main(int argc, char** argv) {
  cxxopts::Options options("murmurd",
                           "murmur daemon: runs one node of murmur (gossip jobs, and the aggregator or a "
                           "client of federated jobs) over the secure transport");
  options.add_options()("config", "NodeConfig file (protobuf text or JSON)", cxxopts::value<std::string>())(
      "version", "print the version")("h,help", "print this help");
  std::string path;
  try {
    auto parsed = options.parse(argc, argv);
    if (parsed.count("help")) {
      std::cout << options.help() << "\n";
      return 0;
    }
    if (parsed.count("version")) {
      std::cout << "murmurd " << MURMUR_VERSION << "\n" << murmur::node::CpuFeaturesLine() << "\n";
      return 0;
    }
    if (!parsed.count("config")) {
      std::cerr << "murmurd: --config FILE is required\n";
      return 2;
    }
    if (!parsed.unmatched().empty()) {
      std::cerr << "murmurd: unexpected argument '" << parsed.unmatched().front() << "'\n";
      return 2;
    }
    path = parsed["config"].as<std::string>();
  } catch (const std::exception& e) {
    std::cerr << "murmurd: " << e.what() << "\n";
    return 2;
  }
  // Every kernel level computes the same bits; MURMUR_SIMD picks a lower one.
  if (const murmur::Status s = murmur::CapSimdFromEnvironment(); !s.ok()) {
    std::cerr << "murmurd: " << s.message() << "\n";
    return 2;
  }
  murmur::PinEigenBlocking();
  auto config = murmur::node::LoadNodeConfig(path);
  if (!config.ok()) {
    std::cerr << "murmurd: " << config.status().message() << "\n";
    return 2;
  }
  auto daemon = murmur::node::Daemon::Create(*config);
  if (!daemon.ok()) {
    std::cerr << "murmurd: " << daemon.status().message() << "\n";
    return 1;
  }
  murmur::Status st = (*daemon)->Run(/*handle_signals=*/true);
  if (!st.ok()) {
    std::cerr << "murmurd: " << st.message() << "\n";
    return 1;
  }
  return 0;
}
