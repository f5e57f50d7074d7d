#include "config/scenario_fields.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "proto/options.pb.h"

namespace murmur::config {

namespace {

using google::protobuf::FieldDescriptor;

std::vector<ScenarioField> BuildFields() {
  std::vector<ScenarioField> fields;
  auto add = [&](const google::protobuf::Descriptor* d, const FieldDescriptor* holder,
                 const std::string& prefix) {
    for (int i = 0; i < d->field_count(); ++i) {
      const FieldDescriptor* f = d->field(i);
      if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE)
        fields.push_back({f, holder, prefix + f->name()});
    }
  };
  add(proto::JobSpec::descriptor(), nullptr, "");
  const auto* scenario = proto::Scenario::descriptor();
  add(scenario, nullptr, "");
  for (int i = 0; i < scenario->field_count(); ++i) {
    const FieldDescriptor* f = scenario->field(i);
    if (f->options().HasExtension(proto::flag_prefix))
      add(f->message_type(), f, f->options().GetExtension(proto::flag_prefix));
  }
  return fields;
}

Result<std::uint64_t> ParseUnsigned(const std::string& spelled, const std::string& text, std::uint64_t max) {
  std::size_t used = 0;
  unsigned long long v = 0;
  bool ok = !text.empty() && text[0] != '-' && text[0] != '+' && text[0] != ' ';
  if (ok) {
    try {
      v = std::stoull(text, &used);
    } catch (const std::exception&) {
      ok = false;
    }
  }
  if (!ok || used != text.size() || v > max) {
    return Status::InvalidArgument(spelled + " wants a whole number up to " + std::to_string(max) +
                                   ", got '" + text + "'");
  }
  return static_cast<std::uint64_t>(v);
}

// Levenshtein distance, for suggestions (names are short).
std::size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

}  // namespace

const std::vector<ScenarioField>& ScenarioFields() {
  static const std::vector<ScenarioField> fields = BuildFields();
  return fields;
}

const ScenarioField* FindScenarioField(std::string_view name) {
  for (const ScenarioField& f : ScenarioFields()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::vector<std::string> SimilarScenarioFields(std::string_view name) {
  std::vector<std::pair<std::size_t, std::string>> near;
  for (const ScenarioField& f : ScenarioFields()) {
    const std::size_t d = EditDistance(name, f.name);
    if (d <= 3 && d < std::max<std::size_t>(name.size(), 2)) near.emplace_back(d, f.name);
  }
  std::stable_sort(near.begin(), near.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (std::size_t i = 0; i < near.size() && i < 3; ++i) out.push_back(near[i].second);
  return out;
}

std::string DefaultText(const FieldDescriptor* f) {
  if (f->is_repeated()) return "";  // an empty list (attackers: none)
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING: return f->default_value_string();
    case FieldDescriptor::CPPTYPE_UINT32: return std::to_string(f->default_value_uint32());
    case FieldDescriptor::CPPTYPE_UINT64: return std::to_string(f->default_value_uint64());
    case FieldDescriptor::CPPTYPE_DOUBLE: {
      std::ostringstream os;
      os << f->default_value_double();
      return os.str();
    }
    case FieldDescriptor::CPPTYPE_BOOL: return f->default_value_bool() ? "true" : "false";
    default: return "";
  }
}

Status SetScenarioField(proto::Scenario& scenario, const ScenarioField& field, const std::string& text,
                        const std::string& spelled) {
  const FieldDescriptor* f = field.field;
  google::protobuf::Message* holder = &scenario;
  if (f->containing_type() == proto::JobSpec::descriptor()) holder = scenario.mutable_spec();
  if (field.holder != nullptr) holder = scenario.GetReflection()->MutableMessage(&scenario, field.holder);
  google::protobuf::Message& s = *holder;
  const auto* r = s.GetReflection();
  if (f->is_repeated()) {  // a comma-separated list of whole numbers (attackers)
    if (f->cpp_type() != FieldDescriptor::CPPTYPE_UINT32)
      return Status::Internal("scenario field '" + f->name() + "' has a type that cannot be set from text");
    r->ClearField(&s, f);
    std::stringstream items(text);
    for (std::string item; std::getline(items, item, ',');) {
      MURMUR_ASSIGN_OR_RETURN(std::uint64_t v,
                              ParseUnsigned(spelled, item, std::numeric_limits<std::uint32_t>::max()));
      r->AddUInt32(&s, f, static_cast<std::uint32_t>(v));
    }
    return Status::Ok();
  }
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING: r->SetString(&s, f, text); break;
    case FieldDescriptor::CPPTYPE_UINT32: {
      MURMUR_ASSIGN_OR_RETURN(std::uint64_t v,
                              ParseUnsigned(spelled, text, std::numeric_limits<std::uint32_t>::max()));
      r->SetUInt32(&s, f, static_cast<std::uint32_t>(v));
      break;
    }
    case FieldDescriptor::CPPTYPE_UINT64: {
      MURMUR_ASSIGN_OR_RETURN(std::uint64_t v,
                              ParseUnsigned(spelled, text, std::numeric_limits<std::uint64_t>::max()));
      r->SetUInt64(&s, f, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_DOUBLE: {
      std::size_t used = 0;
      double v = NAN;
      try {
        v = std::stod(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (text.empty() || used != text.size() || !std::isfinite(v))
        return Status::InvalidArgument(spelled + " wants a number, got '" + text + "'");
      r->SetDouble(&s, f, v);
      break;
    }
    case FieldDescriptor::CPPTYPE_BOOL: {
      if (text == "true" || text == "1" || text == "yes") {
        r->SetBool(&s, f, true);
      } else if (text == "false" || text == "0" || text == "no") {
        r->SetBool(&s, f, false);
      } else {
        return Status::InvalidArgument(spelled + " wants true or false, got '" + text + "'");
      }
      break;
    }
    default:
      return Status::Internal("scenario field '" + f->name() + "' has a type that cannot be set from text");
  }
  return Status::Ok();
}

}  // namespace murmur::config
