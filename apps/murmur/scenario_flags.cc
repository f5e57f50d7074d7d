#include "apps/murmur/scenario_flags.h"

#include "config/scenario_fields.h"
#include "proto/options.pb.h"

namespace murmur::cli {

namespace {

std::string Dashed(std::string name) {
  for (char& c : name) {
    if (c == '_') c = '-';
  }
  return name;
}

}  // namespace

void AddScenarioFlags(cxxopts::Options& options) {
  auto adder = options.add_options("scenario");
  for (const config::ScenarioField& field : config::ScenarioFields()) {
    const auto* f = field.field;
    std::string help = f->options().GetExtension(proto::help);
    std::string def = config::DefaultText(f);
    if (!def.empty()) help += " (default: " + def + ")";
    if (f->cpp_type() == google::protobuf::FieldDescriptor::CPPTYPE_BOOL) {
      adder(Dashed(field.name), help, cxxopts::value<std::string>()->implicit_value("true"));
    } else {
      adder(Dashed(field.name), help, cxxopts::value<std::string>());
    }
  }
}

Status ApplyScenarioFlags(const cxxopts::ParseResult& result, proto::Scenario& scenario) {
  for (const config::ScenarioField& field : config::ScenarioFields()) {
    const std::string flag = Dashed(field.name);
    if (result.count(flag) == 0) continue;
    MURMUR_RETURN_IF_ERROR(
        config::SetScenarioField(scenario, field, result[flag].as<std::string>(), "--" + flag));
  }
  return Status::Ok();
}

}  // namespace murmur::cli
