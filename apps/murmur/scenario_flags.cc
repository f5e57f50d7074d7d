#include "apps/murmur/scenario_flags.h"

#include <cmath>
#include <limits>
#include <sstream>
#include <vector>

namespace murmur::cli {

namespace {

using google::protobuf::FieldDescriptor;

// One flag: a scalar field of the spec, of the scenario, or of a message the
// scenario embeds with a flag_prefix (faults.drop is --fault-drop).
struct Flag {
  const FieldDescriptor* field;
  const FieldDescriptor* holder;  // null: spec or scenario itself
  std::string name;               // with dashes
};

std::string Dashed(std::string name) {
  for (char& c : name) {
    if (c == '_') c = '-';
  }
  return name;
}

// The JobSpec's fields, then the Scenario's own and its prefixed messages'.
// No two names collide (proto/scenario.proto), so flags stay flat.
std::vector<Flag> Flags() {
  std::vector<Flag> flags;
  auto add = [&](const google::protobuf::Descriptor* d, const FieldDescriptor* holder,
                 const std::string& prefix) {
    for (int i = 0; i < d->field_count(); ++i) {
      const FieldDescriptor* f = d->field(i);
      if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE)
        flags.push_back({f, holder, Dashed(prefix + f->name())});
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
  return flags;
}

std::string DefaultText(const FieldDescriptor* f) {
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING:
      return f->default_value_string().empty() ? "" : f->default_value_string();
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

Result<std::uint64_t> ParseUnsigned(const std::string& flag, const std::string& text, std::uint64_t max) {
  std::size_t used = 0;
  unsigned long long v = 0;
  bool ok = !text.empty() && text[0] != '-';
  if (ok) {
    try {
      v = std::stoull(text, &used);
    } catch (const std::exception&) {
      ok = false;
    }
  }
  if (!ok || used != text.size() || v > max) {
    return Status::InvalidArgument("--" + flag + " wants a whole number up to " + std::to_string(max) +
                                   ", got '" + text + "'");
  }
  return static_cast<std::uint64_t>(v);
}

}  // namespace

void AddScenarioFlags(cxxopts::Options& options) {
  auto adder = options.add_options("scenario");
  for (const Flag& flag : Flags()) {
    const FieldDescriptor* f = flag.field;
    std::string help = f->options().GetExtension(proto::help);
    std::string def = DefaultText(f);
    if (!def.empty()) help += " (default: " + def + ")";
    if (f->cpp_type() == FieldDescriptor::CPPTYPE_BOOL) {
      adder(flag.name, help, cxxopts::value<std::string>()->implicit_value("true"));
    } else {
      adder(flag.name, help, cxxopts::value<std::string>());
    }
  }
}

Status ApplyScenarioFlags(const cxxopts::ParseResult& result, proto::Scenario& scenario) {
  for (const Flag& spelled : Flags()) {
    const FieldDescriptor* f = spelled.field;
    const std::string& flag = spelled.name;
    if (result.count(flag) == 0) continue;
    google::protobuf::Message* holder = &scenario;
    if (f->containing_type() == proto::JobSpec::descriptor()) holder = scenario.mutable_spec();
    if (spelled.holder != nullptr)
      holder = scenario.GetReflection()->MutableMessage(&scenario, spelled.holder);
    google::protobuf::Message& s = *holder;
    const auto* r = s.GetReflection();
    const std::string text = result[flag].as<std::string>();
    if (f->is_repeated()) {  // a comma-separated list of whole numbers (attackers)
      r->ClearField(&s, f);
      std::stringstream items(text);
      for (std::string item; std::getline(items, item, ',');) {
        MURMUR_ASSIGN_OR_RETURN(std::uint64_t v,
                                ParseUnsigned(flag, item, std::numeric_limits<std::uint32_t>::max()));
        r->AddUInt32(&s, f, static_cast<std::uint32_t>(v));
      }
      continue;
    }
    switch (f->cpp_type()) {
      case FieldDescriptor::CPPTYPE_STRING: r->SetString(&s, f, text); break;
      case FieldDescriptor::CPPTYPE_UINT32: {
        MURMUR_ASSIGN_OR_RETURN(std::uint64_t v,
                                ParseUnsigned(flag, text, std::numeric_limits<std::uint32_t>::max()));
        r->SetUInt32(&s, f, static_cast<std::uint32_t>(v));
        break;
      }
      case FieldDescriptor::CPPTYPE_UINT64: {
        MURMUR_ASSIGN_OR_RETURN(std::uint64_t v,
                                ParseUnsigned(flag, text, std::numeric_limits<std::uint64_t>::max()));
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
        if (used != text.size() || !std::isfinite(v)) {
          return Status::InvalidArgument("--" + flag + " wants a number, got '" + text + "'");
        }
        r->SetDouble(&s, f, v);
        break;
      }
      case FieldDescriptor::CPPTYPE_BOOL: {
        if (text == "true" || text == "1" || text == "yes") {
          r->SetBool(&s, f, true);
        } else if (text == "false" || text == "0" || text == "no") {
          r->SetBool(&s, f, false);
        } else {
          return Status::InvalidArgument("--" + flag + " wants true or false, got '" + text + "'");
        }
        break;
      }
      default: return Status::Internal("scenario field '" + f->name() + "' has a type the CLI cannot set");
    }
  }
  return Status::Ok();
}

}  // namespace murmur::cli
