// Reading the files that hold a JobSpec: scenario files (`murmur sim
// --scenario`, proto::Scenario) and job files (`murmur job submit`,
// proto::JobConfig), as protobuf text or JSON (JSON when the first non-blank
// character is '{'), with unknown fields refused by name; and writing them
// back as text.
//
// Old files: the flat layouts of murmur 0.1 (JobSpec fields at the top level,
// proto/legacy.proto) are read for this release. Every field moves to its new
// place (`spec.<name>`), and one warning names the moved fields. A 0.1 job
// file keeps its meaning: where its old default differs from JobSpec's
// (model softmax, rounds 100, compression none, ...) the old default is
// written into the spec; dataset_dir becomes spec.data_dir; a federated job's
// `nodes` counted the aggregator's daemon too, so spec.nodes is one less, and
// its `attackers` (node ids) become client indices; its `round_timeout` was
// the SecAgg+ key-stage timeout and becomes spec.secagg_timeout; a
// gossip-learning job drew peers from every member, so its topology becomes
// `complete`. A file that
// mixes the layouts is refused, with a hint when a field belongs in `spec`.
//
// Thread-safety: free functions without shared state.
#pragma once

#include <string>
#include <vector>

#include <google/protobuf/message.h>

#include "core/status.h"
#include "proto/node.pb.h"
#include "proto/scenario.pb.h"

namespace murmur::config {

// Parses `text` into *message (cleared first). InvalidArgument starts with
// `origin` and names the line and column, or the unknown field.
Status ParseMessageText(const std::string& text, const std::string& origin,
                        google::protobuf::Message* message);

// Reads a config file of at most 1 MiB (a longer one is refused before it is read whole).
Result<std::string> ReadConfigFile(const std::string& path, const std::string& what);

// `warnings` (may be null) receives the warning of an old-layout file.
Result<proto::Scenario> ParseScenario(const std::string& text, const std::string& origin,
                                      std::vector<std::string>* warnings = nullptr);
Result<proto::Scenario> LoadScenarioFile(const std::string& path,
                                         std::vector<std::string>* warnings = nullptr);
Result<proto::JobConfig> ParseJobConfig(const std::string& text, const std::string& origin,
                                        std::vector<std::string>* warnings = nullptr);
Result<proto::JobConfig> LoadJobConfig(const std::string& path, std::vector<std::string>* warnings = nullptr);

// When `text` is a NodeConfig whose `job` block is in the 0.1 layout, a hint
// that names the moved fields (" (the job block is in ... layout: ...)");
// empty otherwise. A daemon's config is not converted: its error gets the hint.
std::string OldNodeJobHint(const std::string& text);

// The message as protobuf text with every field of it and of its embedded
// messages shown, defaults included (for --print-scenario and run logs).
std::string ToTextWithDefaults(const google::protobuf::Message& message);

}  // namespace murmur::config
