// Scenario files: protobuf text or JSON for proto::Scenario (proto/scenario.proto).
//
// The same schema backs the `murmur sim` flags. Unknown fields are rejected
// with their name; values are checked by ValidateScenario with messages that
// name the field and its allowed range.
//
// Thread-safety: free functions.
#pragma once

#include <string>

#include "core/status.h"
#include "ml/schedule.h"
#include "proto/scenario.pb.h"

namespace murmur::sim {

// Parses `text` as JSON when it starts with '{', as protobuf text otherwise.
// `origin` names the source in errors (a file name).
Result<proto::Scenario> ParseScenario(const std::string& text, const std::string& origin);
Result<proto::Scenario> LoadScenarioFile(const std::string& path);

// Checks ranges and names (algorithm, topology kind, partition) of every field.
Status ValidateScenario(const proto::Scenario& s);

// The learning-rate schedule of a gossip scenario's nodes: lr_schedule and
// lr_min, with the horizon in local steps (rounds x local_steps). Each node
// counts its own steps. InvalidArgument names the field for a bad spec.
Result<ml::ScheduleOptions> ScenarioSchedule(const proto::Scenario& s);

// The scenario as protobuf text, every field shown (for --print-scenario and run logs).
std::string ScenarioToText(const proto::Scenario& s);

}  // namespace murmur::sim
