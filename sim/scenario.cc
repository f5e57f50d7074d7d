#include "sim/scenario.h"

#include "sim/faults.h"
#include "sim/federated_run.h"

#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/text_format.h>
#include <google/protobuf/util/json_util.h>

#include <cmath>
#include <fstream>
#include <sstream>

namespace murmur::sim {

namespace {

// Collects the text parser's errors ("line 3, column 5: ...") instead of
// letting protobuf print them.
class ErrorCollector final : public google::protobuf::io::ErrorCollector {
 public:
  void AddError(int line, google::protobuf::io::ColumnNumber column, const std::string& message) override {
    if (first.empty())
      first = "line " + std::to_string(line + 1) + ", column " + std::to_string(column + 1) + ": " + message;
  }
  std::string first;
};

bool OneOf(const std::string& v, std::initializer_list<const char*> names) {
  for (const char* n : names) {
    if (v == n) return true;
  }
  return false;
}

bool HasPrefix(const std::string& v, const char* p) { return v.rfind(p, 0) == 0; }

}  // namespace

Result<proto::Scenario> ParseScenario(const std::string& text, const std::string& origin) {
  proto::Scenario s;
  std::size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '{') {
    google::protobuf::util::JsonParseOptions opts;
    opts.ignore_unknown_fields = false;
    auto st = google::protobuf::util::JsonStringToMessage(text, &s, opts);
    if (!st.ok()) return Status::InvalidArgument(origin + ": " + std::string(st.message()));
    return s;
  }
  google::protobuf::TextFormat::Parser parser;
  ErrorCollector errors;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &s)) {
    return Status::InvalidArgument(origin + ": " +
                                   (errors.first.empty() ? "not a valid scenario" : errors.first));
  }
  return s;
}

Result<proto::Scenario> LoadScenarioFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("scenario file '" + path + "' cannot be opened");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseScenario(ss.str(), path);
}

Status ValidateScenario(const proto::Scenario& s) {
  auto bad = [](const std::string& field, const std::string& why) {
    return Status::InvalidArgument("scenario field '" + field + "' " + why);
  };
  if (s.nodes() < 1 || s.nodes() > 10'000'000)
    return bad("nodes", "must be in [1, 10000000], got " + std::to_string(s.nodes()));
  if (IsFederatedAlgorithm(s.algorithm())) {
    MURMUR_RETURN_IF_ERROR(ValidateFederatedScenario(s));
  } else if (!OneOf(s.algorithm(), {"dpsgd", "dpsgd-cta", "push-sum", "dsgt", "gossip-learning"})) {
    return bad("algorithm", "'" + s.algorithm() +
                                "' is not one of dpsgd, dpsgd-cta, push-sum, dsgt, gossip-learning, fedavg, "
                                "fedprox, scaffold, fedavgm, fedadam, fedyogi, fedadagrad, fedbuff");
  }
  if (!IsFederatedAlgorithm(s.algorithm())) {
    const bool dpsgd = s.algorithm() == "dpsgd" || s.algorithm() == "dpsgd-cta";
    if (s.gossip_aggregation() != "mean" && !dpsgd) {
      return bad("gossip_aggregation", "'" + s.gossip_aggregation() + "' needs algorithm dpsgd or dpsgd-cta");
    }
    if (s.attack() != "none" && s.attack_fraction() > 0 && !dpsgd) {
      return bad("attack", "gossip attackers need algorithm dpsgd or dpsgd-cta");
    }
    if (s.attack_fraction() < 0 || s.attack_fraction() >= 1)
      return bad("attack_fraction", "must be in [0, 1)");
    if (s.attack_placement() != "members" && s.attack_placement() != "attached")
      return bad("attack_placement", "'" + s.attack_placement() + "' is not one of members, attached");
  }
  const std::string& p = s.partition();
  if (!(p == "iid" || HasPrefix(p, "dirichlet:") || HasPrefix(p, "shards:") || HasPrefix(p, "quantity:"))) {
    return bad("partition", "'" + p + "' is not iid, dirichlet:ALPHA, shards:K or quantity:BETA");
  }
  if (s.rounds() < 1) return bad("rounds", "must be at least 1");
  if (s.eval_every() < 1) return bad("eval_every", "must be at least 1");
  if (s.local_steps() < 1 || s.local_steps() > 100000) return bad("local_steps", "must be in [1, 100000]");
  if (s.batch() < 1 || s.batch() > 65536) return bad("batch", "must be in [1, 65536]");
  if (!(s.lr() > 0) || !std::isfinite(s.lr())) return bad("lr", "must be a positive number");
  if (s.momentum() < 0 || s.momentum() >= 1) return bad("momentum", "must be in [0, 1)");
  if (s.lr_schedule() != "constant" && IsFederatedAlgorithm(s.algorithm()))
    return bad("lr_schedule", "applies to gossip algorithms only (got '" + s.lr_schedule() + "' with " +
                                  s.algorithm() + ")");
  MURMUR_RETURN_IF_ERROR(ScenarioSchedule(s).status());
  if (s.weight_decay() < 0) return bad("weight_decay", "must be >= 0");
  if (s.gamma() < 0 || s.gamma() > 1) return bad("gamma", "must be in [0, 1] (0 picks the default)");
  if (s.loss() < 0 || s.loss() >= 1) return bad("loss", "must be in [0, 1)");
  if (s.jitter() < 0 || s.jitter() >= 1) return bad("jitter", "must be in [0, 1)");
  if (s.latency_ms() < 0) return bad("latency_ms", "must be >= 0");
  if (!(s.round_timeout() > 0)) return bad("round_timeout", "must be > 0 seconds");
  if (s.churn_online() < 0) return bad("churn_online", "must be >= 0 seconds");
  if (!(s.period() > 0)) return bad("period", "must be > 0 seconds");
  if (s.fanout() < 1) return bad("fanout", "must be at least 1");
  if (s.time_budget() < 0) return bad("time_budget", "must be >= 0 seconds");
  if (s.threads() > 1024) return bad("threads", "must be at most 1024");
  MURMUR_RETURN_IF_ERROR(ValidateScenarioFaults(s));
  if (IsFederatedAlgorithm(s.algorithm()) && HasScenarioFaults(s)) {
    return bad("fault_*", "apply to gossip algorithms only; federated runs do not inject faults yet");
  }
  if (s.topology() == "vehicles") {
    if (s.rsus() >= s.nodes()) return bad("rsus", "must be fewer than nodes");
    if (s.grid_blocks() < 1) return bad("grid_blocks", "must be at least 1");
    if (!(s.block_m() > 0) || !(s.speed() >= 0) || !(s.radio_range() > 0) || !(s.round_interval() > 0)) {
      return bad("vehicles", "block_m, radio_range and round_interval must be > 0 and speed >= 0");
    }
  }
  return Status::Ok();
}

Result<ml::ScheduleOptions> ScenarioSchedule(const proto::Scenario& s) {
  return ml::ParseRoundSchedule(s.lr_schedule(), s.lr(), s.lr_min(), s.rounds(), s.local_steps(), "scenario");
}

std::string ScenarioToText(const proto::Scenario& s) {
  google::protobuf::TextFormat::Printer printer;
  std::string out;
  proto::Scenario full;
  // Show defaults too: copy every field's effective value.
  const auto* d = full.GetDescriptor();
  const auto* r = full.GetReflection();
  for (int i = 0; i < d->field_count(); ++i) {
    const auto* f = d->field(i);
    switch (f->cpp_type()) {
      case google::protobuf::FieldDescriptor::CPPTYPE_STRING:
        r->SetString(&full, f, s.GetReflection()->GetString(s, f));
        break;
      case google::protobuf::FieldDescriptor::CPPTYPE_UINT32:
        r->SetUInt32(&full, f, s.GetReflection()->GetUInt32(s, f));
        break;
      case google::protobuf::FieldDescriptor::CPPTYPE_UINT64:
        r->SetUInt64(&full, f, s.GetReflection()->GetUInt64(s, f));
        break;
      case google::protobuf::FieldDescriptor::CPPTYPE_DOUBLE:
        r->SetDouble(&full, f, s.GetReflection()->GetDouble(s, f));
        break;
      case google::protobuf::FieldDescriptor::CPPTYPE_BOOL:
        r->SetBool(&full, f, s.GetReflection()->GetBool(s, f));
        break;
      default: break;
    }
  }
  printer.PrintToString(full, &out);
  return out;
}

}  // namespace murmur::sim
