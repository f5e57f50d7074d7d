// NodeConfig loading and checking for murmurd (proto/node.proto, docs/daemon.md).
//
// Thread-safety: free functions without shared state.
#pragma once

#include <cstdint>
#include <string>

#include "core/status.h"
#include "node/transport/address.h"
#include "proto/node.pb.h"

namespace murmur::node {

// Parses protobuf text, or JSON when the first non-blank character is '{'
// (config/files.h). An unknown or misspelled field is an InvalidArgument
// naming it; a `job` block in murmur 0.1's flat layout is refused with the new
// place of its fields (job files for `murmur job submit` are read by
// config::LoadJobConfig, which converts that layout).
Result<proto::NodeConfig> ParseNodeConfig(const std::string& text, const std::string& origin);
// Reads (at most 1 MiB) and parses a config file.
Result<proto::NodeConfig> LoadNodeConfig(const std::string& path);
// Checks the fields parsing cannot: ids and addresses (the job: ValidateJobConfig).
Status ValidateNodeConfig(const proto::NodeConfig& config);

}  // namespace murmur::node
