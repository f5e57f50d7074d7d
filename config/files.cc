#include "config/files.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>

#include "crypto/file_io.h"
#include "engine/algorithms.h"
#include "proto/job_spec.pb.h"
#include "proto/legacy.pb.h"

namespace murmur::config {

namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

constexpr std::size_t kMaxConfigBytes = std::size_t{1} << 20;

// Collects the text parser's first error ("line 3, column 5: ...").
class FirstError final : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (first.empty())
      first = "line " + std::to_string(line + 1) + ", column " + std::to_string(column + 1) + ": " + message;
  }
  std::string first;
};

bool IsJson(const std::string& text) {
  const std::size_t first = text.find_first_not_of(" \t\r\n");
  return first != std::string::npos && text[first] == '{';
}

// Parses leniently: unknown fields are skipped (only to read an old layout's known part).
bool ParseLenient(const std::string& text, Message* m) {
  m->Clear();
  if (IsJson(text)) {
    google::protobuf::util::JsonParseOptions opts;
    opts.ignore_unknown_fields = true;
    return google::protobuf::util::JsonStringToMessage(text, m, opts).ok();
  }
  google::protobuf::TextFormat::Parser parser;
  FirstError errors;
  parser.RecordErrorsTo(&errors);
  parser.AllowUnknownField(true);
  return parser.ParseFromString(text, m);
}

// Copies field `from` of `src` to field `to` of `dst` (same type and label).
void CopyField(const Message& src, const FieldDescriptor* from, Message* dst, const FieldDescriptor* to) {
  const Reflection* r = src.GetReflection();
  const Reflection* w = dst->GetReflection();
  if (from->is_repeated()) {
    w->ClearField(dst, to);
    for (int i = 0; i < r->FieldSize(src, from); ++i) {
      switch (from->cpp_type()) {
        case FieldDescriptor::CPPTYPE_UINT32:
          w->AddUInt32(dst, to, r->GetRepeatedUInt32(src, from, i));
          break;
        case FieldDescriptor::CPPTYPE_STRING:
          w->AddString(dst, to, r->GetRepeatedString(src, from, i));
          break;
        default: break;
      }
    }
    return;
  }
  switch (from->cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING: w->SetString(dst, to, r->GetString(src, from)); break;
    case FieldDescriptor::CPPTYPE_UINT32: w->SetUInt32(dst, to, r->GetUInt32(src, from)); break;
    case FieldDescriptor::CPPTYPE_UINT64: w->SetUInt64(dst, to, r->GetUInt64(src, from)); break;
    case FieldDescriptor::CPPTYPE_DOUBLE: w->SetDouble(dst, to, r->GetDouble(src, from)); break;
    case FieldDescriptor::CPPTYPE_BOOL: w->SetBool(dst, to, r->GetBool(src, from)); break;
    default: break;
  }
}

// Whether a field's declared defaults differ between two schemas.
bool DefaultsDiffer(const FieldDescriptor* a, const FieldDescriptor* b) {
  if (a->is_repeated()) return false;
  switch (a->cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING: return a->default_value_string() != b->default_value_string();
    case FieldDescriptor::CPPTYPE_UINT32: return a->default_value_uint32() != b->default_value_uint32();
    case FieldDescriptor::CPPTYPE_UINT64: return a->default_value_uint64() != b->default_value_uint64();
    case FieldDescriptor::CPPTYPE_DOUBLE: return a->default_value_double() != b->default_value_double();
    case FieldDescriptor::CPPTYPE_BOOL: return a->default_value_bool() != b->default_value_bool();
    default: return false;
  }
}

// Moves every field of the flat `old` into `spec` (JobSpec fields, some
// renamed) or `outer` (the rest, by the same name). A JobSpec field the file
// leaves unset gets the old schema's default where it differs from JobSpec's,
// so an old file keeps its meaning. Returns the names of the fields moved into
// spec that the file set.
std::vector<std::string> MoveFlatFields(const Message& old, proto::JobSpec* spec, Message* outer,
                                        const std::map<std::string, std::string>& renamed) {
  std::vector<std::string> moved;
  const Descriptor* d = old.GetDescriptor();
  const Reflection* r = old.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    auto it = renamed.find(f->name());
    const std::string name = it == renamed.end() ? f->name() : it->second;
    const FieldDescriptor* to_spec = proto::JobSpec::descriptor()->FindFieldByName(name);
    const bool set = f->is_repeated() ? r->FieldSize(old, f) > 0 : r->HasField(old, f);
    if (to_spec != nullptr) {
      if (set) {
        CopyField(old, f, spec, to_spec);
        moved.push_back(f->name() == name ? name : f->name() + " (now " + name + ")");
      } else if (DefaultsDiffer(f, to_spec)) {
        CopyField(old, f, spec, to_spec);  // reads the old default
      }
    } else if (set) {
      const FieldDescriptor* to_outer = outer->GetDescriptor()->FindFieldByName(name);
      if (to_outer != nullptr) CopyField(old, f, outer, to_outer);
    }
  }
  return moved;
}

// 0.1's fault_* fields of a scenario, in milliseconds where they were times,
// are the faults { } message now (seconds).
void MoveOldFaults(const proto::LegacyScenario& old, proto::FaultConfig* faults,
                   std::vector<std::string>* moved) {
  auto note = [&](bool set, const char* from, const char* to) {
    if (set) moved->push_back(std::string(from) + " (now faults." + to + ")");
    return set;
  };
  if (note(old.has_fault_drop(), "fault_drop", "drop")) faults->set_drop(old.fault_drop());
  if (note(old.has_fault_duplicate(), "fault_duplicate", "duplicate"))
    faults->set_duplicate(old.fault_duplicate());
  if (note(old.has_fault_reorder(), "fault_reorder", "reorder")) faults->set_reorder(old.fault_reorder());
  if (note(old.has_fault_corrupt(), "fault_corrupt", "corrupt")) faults->set_corrupt(old.fault_corrupt());
  if (note(old.has_fault_delay_ms(), "fault_delay_ms", "delay, seconds"))
    faults->set_delay(old.fault_delay_ms() / 1000);
  if (note(old.has_fault_jitter_ms(), "fault_jitter_ms", "delay_jitter, seconds"))
    faults->set_delay_jitter(old.fault_jitter_ms() / 1000);
  if (note(old.has_fault_reorder_hold_ms(), "fault_reorder_hold_ms", "reorder_hold, seconds"))
    faults->set_reorder_hold(old.fault_reorder_hold_ms() / 1000);
  if (note(old.has_fault_partition(), "fault_partition", "partition"))
    faults->set_partition(old.fault_partition());
}

std::string Join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// A hint for an unknown top-level field that is a JobSpec field.
std::string SpecHint(const std::string& error) {
  const std::string key = "no field named \"";
  const std::size_t at = error.find(key);
  if (at == std::string::npos) return "";
  const std::size_t end = error.find('"', at + key.size());
  const std::string name = error.substr(at + key.size(), end - at - key.size());
  if (proto::JobSpec::descriptor()->FindFieldByName(name) == nullptr) return "";
  return " ('" + name + "' belongs in the spec { ... } block)";
}

template <typename T>
Result<T> ParseStrict(const std::string& text, const std::string& origin) {
  T m;
  MURMUR_RETURN_IF_ERROR(ParseMessageText(text, origin, &m));
  return m;
}

// Fills every scalar field of `out` (and of its embedded messages) with `in`'s
// value, so that printing shows defaults too.
void CopyWithDefaults(const Message& in, Message* out) {
  const Descriptor* d = in.GetDescriptor();
  const Reflection* r = in.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const FieldDescriptor* f = d->field(i);
    if (f->is_repeated()) {
      if (r->FieldSize(in, f) > 0) CopyField(in, f, out, f);
      continue;
    }
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      CopyWithDefaults(r->GetMessage(in, f), out->GetReflection()->MutableMessage(out, f));
      continue;
    }
    CopyField(in, f, out, f);
  }
}

}  // namespace

Status ParseMessageText(const std::string& text, const std::string& origin, Message* m) {
  m->Clear();
  if (IsJson(text)) {
    google::protobuf::util::JsonParseOptions opts;
    opts.ignore_unknown_fields = false;
    auto st = google::protobuf::util::JsonStringToMessage(text, m, opts);
    if (!st.ok()) return Status::InvalidArgument(origin + ": " + std::string(st.message()));
    return Status::Ok();
  }
  google::protobuf::TextFormat::Parser parser;
  FirstError errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, m)) {
    return Status::InvalidArgument(origin + ": " +
                                   (errors.first.empty() ? "not a valid " + m->GetTypeName() : errors.first));
  }
  return Status::Ok();
}

Result<std::string> ReadConfigFile(const std::string& path, const std::string& what) {
  auto text = crypto::ReadSmallFile(path, kMaxConfigBytes);
  if (!text.ok()) return text.status().WithContext(what + " '" + path + "'");
  return text;
}

Result<proto::Scenario> ParseScenario(const std::string& text, const std::string& origin,
                                      std::vector<std::string>* warnings) {
  auto parsed = ParseStrict<proto::Scenario>(text, origin);
  if (parsed.ok()) return parsed;
  auto old = ParseStrict<proto::LegacyScenario>(text, origin);
  if (!old.ok())
    return Status::InvalidArgument(parsed.status().message() + SpecHint(parsed.status().message()));
  proto::Scenario s;
  auto moved = MoveFlatFields(*old, s.mutable_spec(), &s, {});
  MoveOldFaults(*old, s.mutable_faults(), &moved);
  if (s.faults().ByteSizeLong() == 0) s.clear_faults();
  if (warnings != nullptr && !moved.empty())
    warnings->push_back(
        origin + ": a murmur 0.1 scenario (flat layout), read for this release: " + Join(moved) +
        " now belong in spec { ... } (murmur sim --scenario FILE --print-scenario prints the new form)");
  return s;
}

Result<proto::Scenario> LoadScenarioFile(const std::string& path, std::vector<std::string>* warnings) {
  MURMUR_ASSIGN_OR_RETURN(std::string text, ReadConfigFile(path, "scenario file"));
  return ParseScenario(text, path, warnings);
}

Result<proto::JobConfig> ParseJobConfig(const std::string& text, const std::string& origin,
                                        std::vector<std::string>* warnings) {
  auto parsed = ParseStrict<proto::JobConfig>(text, origin);
  if (parsed.ok()) return parsed;
  auto legacy = ParseStrict<proto::LegacyJobConfig>(text, origin);
  if (!legacy.ok())
    return Status::InvalidArgument(parsed.status().message() + SpecHint(parsed.status().message()));
  const proto::LegacyJobConfig& old = *legacy;
  proto::JobConfig job;
  proto::JobSpec* spec = job.mutable_spec();
  auto moved = MoveFlatFields(old, spec, &job, {{"dataset_dir", "data_dir"}});
  if (old.algorithm() == "gossip-learning") {
    // 0.1 daemons drew gossip-learning peers from every member, whatever the topology said.
    spec->set_topology("complete");
  }
  if (engine::IsFederatedAlgorithm(old.algorithm())) {
    // 0.1 counted the aggregator's daemon in `nodes` and named attackers by node id.
    spec->set_nodes(old.nodes() > 0 ? old.nodes() - 1 : 0);
    spec->clear_attackers();
    for (std::uint32_t id : old.attackers())
      spec->add_attackers(id < old.aggregator() ? id : (id > old.aggregator() ? id - 1 : old.nodes()));
    spec->set_secagg_timeout(old.round_timeout());  // 0.1's key-stage timeout
    spec->clear_round_timeout();
  }
  if (warnings != nullptr)
    warnings->push_back(
        origin + ": a murmur 0.1 job (flat layout), read for this release: " + Join(moved) +
        " now belong in spec { ... }" +
        (engine::IsFederatedAlgorithm(old.algorithm())
             ? "; a federated job's spec.nodes counts its clients (" + std::to_string(spec->nodes()) +
                   "), not its daemons (" + std::to_string(old.nodes()) +
                   "), and round_timeout is spec.secagg_timeout"
             : "") +
        (old.algorithm() == "gossip-learning"
             ? "; gossip learning now draws peers from the topology, so the job's is complete, as "
               "0.1 drew them"
             : ""));
  return job;
}

Result<proto::JobConfig> LoadJobConfig(const std::string& path, std::vector<std::string>* warnings) {
  MURMUR_ASSIGN_OR_RETURN(std::string text, ReadConfigFile(path, "job"));
  return ParseJobConfig(text, path, warnings);
}

std::string OldNodeJobHint(const std::string& text) {
  proto::LegacyNodeJob old;
  if (!ParseLenient(text, &old) || !old.has_job()) return "";
  proto::JobConfig job;
  const auto moved = MoveFlatFields(old.job(), job.mutable_spec(), &job, {{"dataset_dir", "data_dir"}});
  if (moved.empty()) return "";
  return " (the job block is in the murmur 0.1 layout: " + Join(moved) +
         " now belong in job { spec { ... } }; docs/daemon.md, \"Jobs\")";
}

std::string ToTextWithDefaults(const Message& message) {
  std::unique_ptr<Message> full(message.New());
  CopyWithDefaults(message, full.get());
  google::protobuf::TextFormat::Printer printer;
  std::string out;
  printer.PrintToString(*full, &out);
  return out;
}

}  // namespace murmur::config
