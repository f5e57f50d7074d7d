// Command-line flags generated from proto::Scenario and its embedded JobSpec:
// every field `foo_bar` of config::ScenarioFields() is the flag --foo-bar,
// its help text is the field's `help` option, and values are parsed by
// config::SetScenarioField (as the Python package's keyword arguments are).
// One schema, two spellings.
#pragma once

#include <cxxopts.hpp>

#include "core/status.h"
#include "proto/scenario.pb.h"

namespace murmur::cli {

// Adds one flag per Scenario field to `options` (group "scenario").
void AddScenarioFlags(cxxopts::Options& options);

// Sets every field given on the command line. InvalidArgument names the flag
// and the bad value.
Status ApplyScenarioFlags(const cxxopts::ParseResult& result, proto::Scenario& s);

}  // namespace murmur::cli
