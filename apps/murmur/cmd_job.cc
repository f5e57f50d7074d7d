// murmur job submit|status|stop: an operator runs jobs on a fleet of daemons
// (docs/daemon.md, "Operator commands"). Each command talks to every daemon
// named with --daemon / --cluster over its control port.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <thread>

#include "apps/murmur/command.h"
#include "apps/murmur/job_submit.h"
#include "apps/murmur/model_digests.h"
#include "apps/murmur/operator.h"
#include "config/files.h"
#include "engine/model_factory.h"
#include "engine/topology.h"
#include "ml/torch/torchscript_model.h"
#include "node/config.h"
#include "node/job/job.h"
#include "topology/edge_list.h"
#include "topology/link_aware.h"
#include "topology/measured.h"

namespace murmur::cli {
namespace {

constexpr const char* kName = "job";

const char* kUsage =
    "usage: murmur job <action> [options]   (murmur job <action> --help)\n\n"
    "actions:\n"
    "  submit JOB   send a job (JobConfig, protobuf text or JSON) to every daemon, all or nothing\n"
    "  status       each daemon's job: state, round, test accuracy, loss\n"
    "  stop         stop the running job on every daemon (after the current round; checkpointed)\n"
    "  relink JOB   submit a running link-aware job again when its daemons' measured links choose another "
    "graph\n";

std::string Accuracy(double a) {
  if (a < 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", a);
  return buf;
}

// The last round's training loss, "-" before the first (a loss a model
// returns itself may be negative, so no sentinel value stands for unknown).
std::string Loss(const proto::JobStatus& j) {
  if (!j.has_train_loss()) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", j.train_loss());
  return buf;
}

// Prints one line per daemon; returns the number of daemons that did not answer or refused.
int PrintReplies(const std::vector<DaemonReply>& replies, bool header) {
  if (header)
    std::printf("%-22s %-5s %-16s %-9s %-13s %-9s %s\n", "daemon", "node", "job", "state", "round",
                "accuracy", "loss");
  int bad = 0;
  for (const DaemonReply& r : replies) {
    if (!r.response.ok()) {
      std::printf("%-22s unreachable: %s\n", r.address.c_str(), r.response.status().message().c_str());
      ++bad;
      continue;
    }
    const proto::ControlResponse& resp = *r.response;
    const proto::JobStatus& j = resp.job();
    std::string round = std::to_string(j.rounds_done()) + "/" + std::to_string(j.rounds_total());
    // A DP job's aggregator also reports the privacy spent so far.
    std::string privacy;
    if (j.epsilon() > 0) {
      char buf[48];
      std::snprintf(buf, sizeof(buf), "  epsilon %.4g", j.epsilon());
      privacy = buf;
    }
    // Whom the round waits for, then the job's error (why it failed, or what
    // last went wrong in it), end the line.
    std::string waiting;
    for (int i = 0; i < j.waiting_for_size(); ++i)
      waiting +=
          (i == 0 ? (j.waiting_for_size() == 1 ? "  waiting for node " : "  waiting for nodes ") : ", ") +
          std::to_string(j.waiting_for(i));
    std::printf("%-22s %-5u %-16s %-9s %-13s %-9s %s%s%s%s%s%s%s\n", r.address.c_str(), resp.node_id(),
                j.job_id().empty() ? "-" : j.job_id().c_str(), j.state().c_str(), round.c_str(),
                Accuracy(j.test_accuracy()).c_str(), Loss(j).c_str(), privacy.c_str(), waiting.c_str(),
                resp.ok() ? "" : "  refused: ", resp.ok() ? "" : resp.error().c_str(),
                j.error().empty() ? "" : "  error: ", j.error().c_str());
    if (!resp.ok()) ++bad;
  }
  return bad;
}

// "daemon ADDR (node I)", as a refusal names it.
std::string Named(const DaemonReply& r) {
  std::string out = "daemon " + r.address;
  if (r.response.ok()) out += " (node " + std::to_string(r.response->node_id()) + ")";
  return out;
}

// Why a reply is not a yes: unreachable, or the daemon's refusal.
std::string WhyNot(const DaemonReply& r) {
  return r.response.ok() ? r.response->error() : "unreachable: " + r.response.status().message();
}

// The daemons' node ids (from their status replies) against the job's nodes
// 0 .. DaemonsOf(job) - 1: each at most once, and (unless `partial`) all of
// them. "" when they fit, else what is wrong.
std::string CheckFleet(const proto::JobConfig& job, const std::vector<DaemonReply>& status, bool partial) {
  const NodeId n = node::DaemonsOf(job);
  const std::string range = n == 1 ? "node 0" : "nodes 0.." + std::to_string(n - 1);
  std::map<NodeId, std::string> seen;
  for (const DaemonReply& r : status) {
    const NodeId id = r.response->node_id();
    if (id >= n)
      return "daemon " + r.address + " is node " + std::to_string(id) + ", and job '" + job.job_id() +
             "' has " + range;
    if (auto [it, fresh] = seen.emplace(id, r.address); !fresh)
      return "daemons " + it->second + " and " + r.address + " are both node " + std::to_string(id);
  }
  if (partial || seen.size() == n) return "";
  std::string missing;
  int listed = 0;
  for (NodeId id = 0; id < n; ++id) {
    if (seen.count(id)) continue;
    if (listed++ < 8) missing += (missing.empty() ? "" : ", ") + std::to_string(id);
  }
  if (listed > 8) missing += " and " + std::to_string(listed - 8) + " more";
  return "job '" + job.job_id() + "' runs on " + std::to_string(n) + " daemons (" + range + "), " +
         std::to_string(status.size()) + " named: no daemon for node " + missing +
         " (--partial submits to some of a job's daemons, e.g. one that restarted empty)";
}

// Gives every daemon each artifact (node/artifacts/distribute.h): uploaded
// to `uploads` daemons when none has it, fetched by the others from the
// daemons that hold it; prints a line per artifact.
Status OfferArtifacts(const OperatorContext& ctx, const std::vector<DaemonReply>& fleet,
                      const std::vector<node::LocalArtifact>& artifacts, std::size_t uploads) {
  std::vector<node::FleetDaemon> daemons;
  for (const DaemonReply& r : fleet) daemons.push_back({r.address, r.response->node_id()});
  node::DistributeOptions o;
  o.uploads = uploads;
  o.timeout = std::chrono::milliseconds(ctx.timeout_ms);
  o.say = [](const std::string& s) { std::fprintf(stderr, "murmur job submit: %s\n", s.c_str()); };
  for (const node::LocalArtifact& file : artifacts) {
    const auto start = std::chrono::steady_clock::now();
    auto r = node::DistributeArtifact(daemons, *ctx.credentials, ctx.policy, file, o);
    if (!r.ok()) return r.status().WithContext("artifact " + node::DescribeArtifact(file.manifest.artifact));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::fprintf(
        stderr,
        "murmur job submit: artifact %s: %zu of %zu daemons had it; uploaded to %zu (%llu bytes%s), "
        "fetched by %zu from other daemons, in %.1f s\n",
        node::DescribeArtifact(file.manifest.artifact).c_str(), r->had, daemons.size(), r->uploaded,
        static_cast<unsigned long long>(r->bytes_uploaded),
        r->resumed > 0 ? (", " + std::to_string(r->resumed) + " resumed a broken transfer").c_str() : "",
        r->fetched, seconds);
  }
  return Status::Ok();
}

}  // namespace

Status FillModelHash(const std::string& job_file, const char* action, proto::JobConfig* job,
                     std::vector<node::LocalArtifact>* artifacts) {
  proto::JobSpec& spec = *job->mutable_spec();
  if (!ml::IsTorchScriptSpec(spec.model())) return Status::Ok();
  MURMUR_ASSIGN_OR_RETURN(std::string file, ml::TorchScriptPath(spec.model()));
  std::filesystem::path path(file);
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec) && path.is_relative())
    path = std::filesystem::path(job_file).parent_path() / file;
  if (!std::filesystem::is_regular_file(path, ec)) {
    if (!spec.model_blake2b().empty()) return Status::Ok();  // each daemon holds it already
    return Status::InvalidArgument("spec field 'model_blake2b' is empty and the model file '" + file +
                                   "' is neither here nor next to the job file: set it to the file's BLAKE2b "
                                   "(b2sum FILE), or submit where the file is");
  }
  MURMUR_ASSIGN_OR_RETURN(node::ArtifactManifest manifest, node::DescribeArtifactFile(path.string(), file));
  const std::string& hash = manifest.artifact.blake2b();
  if (spec.model_blake2b().empty()) {
    std::fprintf(stderr, "murmur job %s: spec field 'model_blake2b' set to the BLAKE2b of %s: %s\n", action,
                 path.c_str(), hash.c_str());
    spec.set_model_blake2b(hash);
  } else if (spec.model_blake2b() != hash) {
    return Status::InvalidArgument("the model file '" + path.string() + "' has BLAKE2b " + hash +
                                   " but the job's spec field 'model_blake2b' is " + spec.model_blake2b() +
                                   ": submit the file the job names, or clear the field to take this one");
  }
  *job->add_artifacts() = manifest.artifact;
  artifacts->push_back(node::LocalArtifact{std::move(manifest), path.string()});
  return Status::Ok();
}

Status ChooseMeasuredTopology(const OperatorContext& ctx, double model_bytes, const char* action,
                              proto::JobConfig* job, MeasuredChoice* choice) {
  proto::JobSpec& spec = *job->mutable_spec();
  if (!engine::IsLinkAware(spec.topology())) return Status::Ok();
  proto::ControlRequest request;
  request.mutable_peers();
  MeasuredChoice local;
  MeasuredChoice& chosen = choice != nullptr ? *choice : local;
  topology::MeasuredLinks& links = chosen.links;
  links = topology::MeasuredLinks{};
  links.nodes = spec.nodes();
  std::size_t throughputs = 0;
  for (const MeasuredPair& m : MeasuredPairs(CallAll(ctx, request))) {
    if (m.from >= spec.nodes() || m.to >= spec.nodes()) continue;
    links.pairs[std::uint64_t{m.from} << 32 | m.to] = topology::MeasuredLink{m.rtt_ms, m.mbps};
    if (m.mbps > 0) ++throughputs;
  }
  if (links.pairs.empty())
    return Status::FailedPrecondition("spec field 'topology' " + spec.topology() +
                                      " is chosen from the daemons' measured links, and none has measured a "
                                      "round trip yet (murmur peers shows them; membership probes one peer "
                                      "a protocol period)");
  const topology::PairCost link_cost = topology::MeasuredCost(links, 8 * model_bytes);
  auto made = engine::MakeGraphTopology(spec, spec.nodes(), false, link_cost);
  if (!made.ok()) return made.status();
  chosen.graph = made->schedule->GraphAt(0);
  const topology::Graph& graph = chosen.graph;
  const std::string edges = topology::InlineEdgeList(graph);
  const topology::EdgeCosts cost = topology::CostOf(graph, link_cost);
  std::fprintf(stderr,
               "murmur job %s: topology %s chosen from %zu measured round trips and %zu throughputs "
               "(%zu edges, slowest %.6f s, busiest node %.6f s and all %.6f s for a model of %.0f bytes): "
               "edges:%s\n",
               action, spec.topology().c_str(), links.pairs.size(), throughputs, graph.num_edges(),
               cost.slowest, cost.busiest, cost.total, model_bytes, edges.c_str());
  spec.set_topology("edges:" + edges);
  return Status::Ok();
}

namespace {

int Submit(int argc, char** argv) {
  cxxopts::Options options("murmur job submit",
                           "send a job to every daemon, all or nothing; each runs its part of it");
  AddOperatorOptions(options);
  // clang-format off
  options.add_options()
    ("job", "JobConfig file", cxxopts::value<std::string>())
    ("partial", "the daemons named may be some of the job's (each node id once); by default they must be all")
    ("artifact-uploads", "when no daemon has the job's model file, upload it to this many; the others fetch it from the daemons that have it", cxxopts::value<int>()->default_value("1"))
    ("model-bytes", "a link-aware topology: the bytes of the model each edge carries a round, which "
                    "weigh the measured throughputs against the round trips", cxxopts::value<double>()->default_value("407080"))
    ("h,help", "show this help");
  // clang-format on
  options.parse_positional({"job"});
  options.positional_help("JOB");
  cxxopts::ParseResult args;
  if (auto rc = ParseFlags(options, argc, argv, kName, &args)) return *rc;
  if (!args.count("job")) return UsageError(kName, "submit: missing JOB (a JobConfig file)");
  std::vector<std::string> warnings;
  auto job = config::LoadJobConfig(args["job"].as<std::string>(), &warnings);
  if (!job.ok()) return UsageError(kName, job.status().message());
  for (const auto& w : warnings) std::fprintf(stderr, "murmur job submit: warning: %s\n", w.c_str());
  std::vector<node::LocalArtifact> artifacts;
  if (Status hashed = FillModelHash(args["job"].as<std::string>(), "submit", &*job, &artifacts); !hashed.ok())
    return UsageError(kName, hashed.message());
  auto ctx = LoadOperatorContext(args);
  if (!ctx.ok()) return UsageError(kName, ctx.status().message());
  const double model_bytes = args["model-bytes"].as<double>();
  if (!(model_bytes > 0) || !std::isfinite(model_bytes))
    return UsageError(kName, "--model-bytes must be positive");
  if (Status chosen = ChooseMeasuredTopology(*ctx, model_bytes, "submit", &*job); !chosen.ok())
    return Failure(kName, chosen.message() + "; job " + job->job_id() + " was started nowhere");
  const int uploads = args["artifact-uploads"].as<int>();
  if (uploads < 1) return UsageError(kName, "--artifact-uploads must be at least 1");
  return SubmitToFleet(*ctx, *job, args.count("partial") > 0, artifacts, static_cast<std::size_t>(uploads));
}

}  // namespace

int SubmitToFleet(const OperatorContext& ctx, const proto::JobConfig& job, bool partial,
                  const std::vector<node::LocalArtifact>& artifacts, std::size_t artifact_uploads) {
  const std::string nowhere = "; job " + job.job_id() + " was started nowhere";
  proto::ControlRequest status;
  status.mutable_status();
  const std::vector<DaemonReply> fleet = CallAll(ctx, status);
  for (const DaemonReply& r : fleet)
    if (!r.response.ok()) return Failure(kName, Named(r) + " " + WhyNot(r) + nowhere);
  if (std::string why = CheckFleet(job, fleet, partial); !why.empty()) return Failure(kName, why + nowhere);
  if (Status offered = OfferArtifacts(ctx, fleet, artifacts, artifact_uploads); !offered.ok())
    return Failure(kName, offered.message() + nowhere);

  proto::ControlRequest prepare;
  *prepare.mutable_prepare()->mutable_job() = job;
  const std::vector<DaemonReply> prepared = CallAll(ctx, prepare);
  const DaemonReply* refused = nullptr;
  for (const DaemonReply& r : prepared)
    if (!refused && (!r.response.ok() || !r.response->ok())) refused = &r;
  if (refused) {
    proto::ControlRequest abort;
    abort.mutable_abort()->set_job_id(job.job_id());
    CallAll(ctx, abort);  // a daemon that did not answer drops it after its hold
    PrintReplies(prepared, true);
    return Failure(kName, Named(*refused) + " refused: " + WhyNot(*refused) + nowhere);
  }

  proto::ControlRequest commit;
  commit.mutable_commit()->set_job_id(job.job_id());
  const std::vector<DaemonReply> committed = CallAll(ctx, commit);
  PrintReplies(committed, true);
  std::vector<std::string> failed, started;
  for (const DaemonReply& r : committed) {
    if (r.response.ok() && r.response->ok()) {
      started.push_back(r.address);
    } else {
      failed.push_back(Named(r) + ": " + WhyNot(r));
    }
  }
  if (!failed.empty()) {
    // Undo: the started ones stop after their current round (checkpointed).
    proto::ControlRequest stop;
    stop.mutable_stop()->set_job_id(job.job_id());
    OperatorContext some = ctx;
    some.daemons = started;
    CallAll(some, stop);
    std::string list;
    for (const auto& f : failed) list += (list.empty() ? "" : "; ") + f;
    return Failure(kName, "the commit failed on " + std::to_string(failed.size()) + " of " +
                              std::to_string(committed.size()) + " daemons (" + list + "); the " +
                              std::to_string(started.size()) + " that started job " + job.job_id() +
                              " were told to stop");
  }
  std::printf("job %s submitted to %zu daemons\n", job.job_id().c_str(), ctx.daemons.size());
  return kExitOk;
}

namespace {

int Status(int argc, char** argv) {
  cxxopts::Options options("murmur job status", "each daemon's job: state, round, test accuracy, loss");
  AddOperatorOptions(options);
  // clang-format off
  options.add_options()
    ("wait", "poll every --interval seconds until no daemon runs a job; then print the mean test accuracy")
    ("interval", "seconds between polls with --wait", cxxopts::value<double>()->default_value("5"))
    ("model-digests", "also print the models' digests (BLAKE2b-512 of their parameters) as `murmur sim "
                      "--model-digests` does: each gossip daemon's, the aggregator's global model")
    ("h,help", "show this help");
  // clang-format on
  cxxopts::ParseResult args;
  if (auto rc = ParseFlags(options, argc, argv, kName, &args)) return *rc;
  auto ctx = LoadOperatorContext(args);
  if (!ctx.ok()) return UsageError(kName, ctx.status().message());
  const double interval = args["interval"].as<double>();
  if (!(interval >= 0.1 && interval <= 3600))
    return UsageError(kName, "--interval must be in [0.1, 3600] seconds");
  proto::ControlRequest request;
  request.mutable_status();
  const bool digests = args.count("model-digests") > 0;
  if (digests) request.mutable_status()->set_model_digest(true);
  // The digests line(s) of the replies: gossip daemons by node id, the aggregator's global model.
  const auto print_digests = [](const std::vector<DaemonReply>& replies) {
    std::vector<std::pair<std::uint32_t, std::string>> nodes;
    for (const auto& r : replies) {
      if (!r.response.ok() || !r.response->job().has_model_blake2b()) continue;
      const auto& j = r.response->job();
      if (j.role() == "aggregator") std::printf("%s\n", GlobalModelDigestLine(j.model_blake2b()).c_str());
      if (j.role() == "node") nodes.emplace_back(r.response->node_id(), j.model_blake2b());
    }
    std::sort(nodes.begin(), nodes.end());
    if (!nodes.empty()) std::printf("%s\n", ModelDigestsLine(nodes).c_str());
  };
  for (bool first = true;; first = false) {
    if (!first) std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(interval * 1000)));
    const auto replies = CallAll(*ctx, request);
    const int bad = PrintReplies(replies, first || !args.count("wait"));
    if (!args.count("wait")) {
      if (digests) print_digests(replies);
      return bad > 0 ? kExitFailure : kExitOk;
    }
    bool running = false;
    // Gossip: every node's own model; federated: the aggregator's global
    // model, and apart from it the last global model each client received.
    double sum = 0, client_sum = 0, global = -1;
    int evaluated = 0, clients = 0, done = 0;
    std::string aggregator;
    for (const auto& r : replies) {
      if (!r.response.ok()) continue;
      const auto& j = r.response->job();
      running = running || j.state() == "running" || j.state() == "draining";
      done += j.state() == "done";
      if (j.test_accuracy() < 0) continue;
      if (j.role() == "aggregator") {
        global = j.test_accuracy();
        aggregator = r.address;
      } else if (j.role() == "client") {
        client_sum += j.test_accuracy();
        ++clients;
      } else {
        sum += j.test_accuracy();
        ++evaluated;
      }
    }
    if (!running) {
      if (global >= 0)
        std::printf("global model test accuracy %.4f (the aggregator, %s)\n", global, aggregator.c_str());
      if (clients > 0)
        std::printf(
            "clients: mean test accuracy %.4f of the last global model each received, over %d clients\n",
            client_sum / clients, clients);
      if (evaluated > 0)
        std::printf("mean test accuracy %.4f over %d daemons (%d done)\n", sum / evaluated, evaluated, done);
      if (digests) print_digests(replies);
      return bad > 0 || done < static_cast<int>(replies.size()) ? kExitFailure : kExitOk;
    }
  }
}

int Stop(int argc, char** argv) {
  cxxopts::Options options(
      "murmur job stop",
      "stop the running job on every daemon after its current round (it is checkpointed; "
      "submitting the same job again continues it)");
  AddOperatorOptions(options);
  options.add_options()("job-id", "stop only this job", cxxopts::value<std::string>())("h,help",
                                                                                       "show this help");
  cxxopts::ParseResult args;
  if (auto rc = ParseFlags(options, argc, argv, kName, &args)) return *rc;
  auto ctx = LoadOperatorContext(args);
  if (!ctx.ok()) return UsageError(kName, ctx.status().message());
  proto::ControlRequest request;
  request.mutable_stop();
  if (args.count("job-id")) request.mutable_stop()->set_job_id(args["job-id"].as<std::string>());
  const int bad = PrintReplies(CallAll(*ctx, request), true);
  return bad > 0 ? kExitFailure : kExitOk;
}

}  // namespace

int RunJob(int argc, char** argv) {
  return DispatchAction(kName, kUsage, "submit, status, stop or relink",
                        {{"submit", Submit}, {"status", Status}, {"stop", Stop}, {"relink", Relink}}, argc,
                        argv);
}

MURMUR_COMMAND("job", "submit, watch, stop and relink jobs on running daemons", RunJob);

}  // namespace murmur::cli
