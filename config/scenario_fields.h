// The settable fields of a scenario: one name per scalar field of the
// JobSpec, of the Scenario itself, and of each message the Scenario embeds
// with a flag_prefix (faults.drop is `fault_drop`). No two names collide
// (proto/scenario.proto), so a scenario reads as one flat set of names: the
// CLI spells them as flags (`--fault-drop`, apps/murmur/scenario_flags.h) and
// the Python package as keyword arguments (`fault_drop=`); both set values
// from text with SetScenarioField, so a value is accepted, parsed and refused
// the same way in both.
//
// Thread-safety: the table is built once and read-only.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <google/protobuf/descriptor.h>

#include "core/status.h"
#include "proto/scenario.pb.h"

namespace murmur::config {

struct ScenarioField {
  const google::protobuf::FieldDescriptor* field;
  // The Scenario's message field that holds `field` (faults); null for the
  // spec's fields and the Scenario's own.
  const google::protobuf::FieldDescriptor* holder;
  std::string name;  // with underscores: "nodes", "fault_drop"
};

// The JobSpec's fields, then the Scenario's own and its prefixed messages', in schema order.
const std::vector<ScenarioField>& ScenarioFields();

// The field called `name` (underscores), or null.
const ScenarioField* FindScenarioField(std::string_view name);

// Up to three field names closest to `name` (edit distance at most 3), closest first.
std::vector<std::string> SimilarScenarioFields(std::string_view name);

// The field's declared default as text ("" for an empty string and for a
// repeated field, whose default is the empty list).
std::string DefaultText(const google::protobuf::FieldDescriptor* field);

// Sets `field` of `scenario` from `text`, parsed by the field's type: a whole
// number (no sign, within the type's range), a finite number, true/false
// (also 1/0, yes/no), a string, or for a repeated field a comma-separated
// list of whole numbers (replacing the list). InvalidArgument names the
// field as `spelled` ("--nodes", "nodes") and quotes the bad value.
Status SetScenarioField(proto::Scenario& scenario, const ScenarioField& field, const std::string& text,
                        const std::string& spelled);

}  // namespace murmur::config
