// murmur job relink JOB: a running job follows the links its daemons measure
// (docs/daemon.md, "Following the links"). Each pass chooses the job's
// link-aware topology again from the round trips and throughputs the daemons
// report now, as `murmur job submit` chose it; when that graph differs from
// the one the job runs on and would load its busiest node at least
// --min-gain less, it stops the job after its current round (checkpointed)
// and submits it again on the new graph, all or nothing; the job goes on
// from its checkpoints. With --every S it passes again every S seconds until
// the job ends.
//
// Only jobs whose state does not depend on their graph qualify (everything
// but CHOCO's public copies: engine::StateFollowsGraph), since only those
// resume from their checkpoints on another graph.
#include <cxxopts.hpp>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "apps/murmur/command.h"
#include "apps/murmur/job_submit.h"
#include "config/files.h"
#include "engine/plan.h"
#include "engine/topology.h"
#include "node/job/job_store.h"
#include "topology/edge_list.h"
#include "topology/link_aware.h"

namespace murmur::cli {
namespace {

constexpr const char* kName = "job relink";

struct RelinkOptions {
  double model_bytes = 407080;
  double min_gain = 0.1;
  double stop_timeout = 120;
  bool force = false;
  bool partial = false;
  std::vector<node::LocalArtifact> artifacts;  // the model file, when the operator has it
};

enum class Pass { kKept, kRelinked, kEnded, kFailed };

// The graph a job's spec describes with `topology` (what its daemons report
// running) in place of its own.
Result<topology::Graph> GraphOf(const proto::JobSpec& spec, const std::string& topology) {
  proto::JobSpec with = spec;
  with.set_topology(topology);
  MURMUR_ASSIGN_OR_RETURN(engine::GraphTopology made, engine::MakeGraphTopology(with, with.nodes()));
  return made.schedule->GraphAt(0);
}

std::vector<DaemonReply> FleetStatus(const OperatorContext& ctx) {
  proto::ControlRequest request;
  request.mutable_status();
  return CallAll(ctx, request);
}

// "node 0 running, node 1 stopped, ...": the job's state on each daemon.
std::string States(const std::vector<DaemonReply>& replies) {
  std::string out;
  for (const DaemonReply& r : replies) {
    out += out.empty() ? "" : ", ";
    if (!r.response.ok()) {
      out += r.address + " unreachable";
      continue;
    }
    const proto::JobStatus& j = r.response->job();
    out += "node " + std::to_string(r.response->node_id()) + " " + (j.job_id().empty() ? "idle" : j.state());
    if (!j.job_id().empty()) out += " (job " + j.job_id() + ")";
  }
  return out;
}

// Stops `job_id` after its current round on every daemon and waits until
// none runs it. The fewest rounds any daemon has done, or DeadlineExceeded.
Result<std::uint64_t> StopAndWait(const OperatorContext& ctx, const std::string& job_id, double timeout,
                                  bool* all_done) {
  proto::ControlRequest stop;
  stop.mutable_stop()->set_job_id(job_id);
  CallAll(ctx, stop);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
  while (true) {
    const std::vector<DaemonReply> replies = FleetStatus(ctx);
    bool moving = false;
    std::uint64_t fewest = UINT64_MAX;
    *all_done = true;
    for (const DaemonReply& r : replies) {
      if (!r.response.ok()) {
        moving = true;
        continue;
      }
      const proto::JobStatus& j = r.response->job();
      moving = moving || j.state() == "running" || j.state() == "draining";
      *all_done = *all_done && j.state() == "done";
      fewest = std::min<std::uint64_t>(fewest, j.rounds_done());
    }
    if (!moving) return fewest;
    if (std::chrono::steady_clock::now() > deadline)
      return Status::DeadlineExceeded("job " + job_id + " did not stop within " + std::to_string(timeout) +
                                      " s: " + States(replies));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// One pass: choose, compare, and stop and submit again when it pays.
Pass RelinkOnce(const OperatorContext& ctx, const proto::JobConfig& job, const RelinkOptions& o) {
  const std::string& id = job.job_id();
  const std::vector<DaemonReply> fleet = FleetStatus(ctx);
  bool all_ended = true, all_running = true, all_known = true;
  for (const DaemonReply& r : fleet) {
    const bool ours = r.response.ok() && r.response->job().job_id() == id;
    const std::string state = ours ? r.response->job().state() : "";
    all_ended = all_ended && (state == "done" || state == "stopped");
    all_running = all_running && state == "running";
    all_known =
        all_known && (state == "running" || state == "draining" || state == "done" || state == "stopped");
  }
  if (all_ended) {
    std::printf("job %s has ended on every daemon (%s): nothing to follow\n", id.c_str(),
                States(fleet).c_str());
    return Pass::kEnded;
  }
  if (all_known && !all_running) {  // stopping or ending: the next pass sees where it went
    std::printf("job %s is ending (%s): nothing changed\n", id.c_str(), States(fleet).c_str());
    return Pass::kKept;
  }
  if (!all_running) {
    Failure(kName, "job " + id + " is not running on every daemon (" + States(fleet) +
                       "): relink follows a running job; submit it first (murmur job submit)");
    return Pass::kFailed;
  }
  // The file must be the running job's configuration but for its topology
  // and rounds (what OwnerTag leaves out): a resubmission of anything else
  // is refused after the stop, and the job would be left stopped.
  const std::uint64_t tag = node::OwnerTag(job);
  for (const DaemonReply& r : fleet) {
    if (!r.response->job().has_owner_tag() || r.response->job().owner_tag() == tag) continue;
    Failure(kName, "job " + id + " on node " + std::to_string(r.response->node_id()) +
                       " has another configuration than the file's (they may differ only in topology and "
                       "rounds, else the daemons refuse the resubmission); nothing stopped, the job runs on");
    return Pass::kFailed;
  }
  const std::string running = fleet.front().response->job().topology();
  bool agree = true;
  for (const DaemonReply& r : fleet) agree = agree && r.response->job().topology() == running;

  proto::JobConfig chosen = job;
  MeasuredChoice choice;
  if (Status st = ChooseMeasuredTopology(ctx, o.model_bytes, "relink", &chosen, &choice); !st.ok()) {
    Failure(kName, st.message() + "; job " + id + " runs on as it is");
    return Pass::kFailed;
  }
  Result<topology::Graph> now = GraphOf(job.spec(), running);
  // A graph the daemons disagree on, or cannot be read here, is replaced
  // whatever its cost.
  const bool comparable = agree && now.ok();
  const topology::PairCost cost = topology::MeasuredCost(choice.links, 8 * o.model_bytes);
  const topology::EdgeCosts after = topology::CostOf(choice.graph, cost);
  if (comparable && topology::InlineEdgeList(*now) == topology::InlineEdgeList(choice.graph)) {
    std::printf("job %s runs on the graph its measured links choose (busiest node %.6f s a round): kept\n",
                id.c_str(), after.busiest);
    return Pass::kKept;
  }
  const double before = comparable ? topology::CostOf(*now, cost).busiest : 0;
  const double gain = comparable && before > 0 ? 1 - after.busiest / before : 1;
  if (comparable && !o.force && gain < o.min_gain) {
    // A graph that would load the busiest node more is "more", not "-x% less".
    std::printf(
        "job %s: the graph its measured links choose would load the busiest node %.6f s a round against "
        "%.6f s now (%.1f%% %s, under --min-gain %.1f%%): kept\n",
        id.c_str(), after.busiest, before, 100 * std::fabs(gain), gain < 0 ? "more" : "less",
        100 * o.min_gain);
    return Pass::kKept;
  }
  if (comparable) {
    std::printf(
        "job %s: busiest node %.6f s a round on the graph chosen now against %.6f s on its own "
        "(%.1f%% less); stopping it after its current round\n",
        id.c_str(), after.busiest, before, 100 * gain);
  } else {
    std::printf("job %s runs on %s: stopping it after its current round\n", id.c_str(),
                agree ? "a graph this command cannot read" : "different graphs on different daemons");
  }
  std::fflush(stdout);
  bool finished = false;
  Result<std::uint64_t> stopped = StopAndWait(ctx, id, o.stop_timeout, &finished);
  if (!stopped.ok()) {
    Failure(kName, stopped.status().message());
    return Pass::kFailed;
  }
  if (finished) {
    std::printf("job %s finished while it stopped: not submitted again\n", id.c_str());
    return Pass::kEnded;
  }
  if (SubmitToFleet(ctx, chosen, o.partial, o.artifacts) != kExitOk) {
    Failure(kName, "job " + id + " stopped after round " + std::to_string(*stopped) +
                       " and was not submitted again; once the cause is fixed, `murmur job submit` of its "
                       "file continues it from its checkpoints");
    return Pass::kFailed;
  }
  std::printf("job %s goes on from its checkpoints (round %llu and after) on the graph chosen now\n",
              id.c_str(), static_cast<unsigned long long>(*stopped));
  return Pass::kRelinked;
}

}  // namespace

int Relink(int argc, char** argv) {
  cxxopts::Options options(
      "murmur job relink",
      "choose a running link-aware job's graph again from the links its daemons measure now; when it "
      "differs and pays, stop the job after its current round and submit it again on it (it goes on from "
      "its checkpoints)");
  AddOperatorOptions(options);
  // clang-format off
  options.add_options()
    ("job", "the job's JobConfig file, as submitted (its topology link-aware:D or link-aware-ring)", cxxopts::value<std::string>())
    ("every", "seconds between passes; 0: one pass", cxxopts::value<double>()->default_value("0"))
    ("min-gain", "relink only when the new graph loads the busiest node at least this fraction less, under the links as measured now", cxxopts::value<double>()->default_value("0.1"))
    ("force", "relink whenever the chosen graph differs from the job's")
    ("model-bytes", "the bytes of the model each edge carries a round, as for murmur job submit", cxxopts::value<double>()->default_value("407080"))
    ("stop-timeout", "seconds to wait for the job to stop before giving up", cxxopts::value<double>()->default_value("120"))
    ("partial", "the daemons named may be some of the job's, as for murmur job submit")
    ("h,help", "show this help");
  // clang-format on
  options.parse_positional({"job"});
  options.positional_help("JOB");
  cxxopts::ParseResult args;
  if (auto rc = ParseFlags(options, argc, argv, kName, &args)) return *rc;
  if (!args.count("job")) return UsageError(kName, "missing JOB (the job's JobConfig file)");
  RelinkOptions o;
  const double every = args["every"].as<double>();
  o.min_gain = args["min-gain"].as<double>();
  o.force = args.count("force") > 0;
  o.model_bytes = args["model-bytes"].as<double>();
  o.stop_timeout = args["stop-timeout"].as<double>();
  o.partial = args.count("partial") > 0;
  if (!(every >= 0 && every <= 86400)) return UsageError(kName, "--every must be in [0, 86400] seconds");
  if (!(o.min_gain >= 0 && o.min_gain < 1)) return UsageError(kName, "--min-gain must be in [0, 1)");
  if (!(o.model_bytes > 0) || !std::isfinite(o.model_bytes))
    return UsageError(kName, "--model-bytes must be positive");
  if (!(o.stop_timeout > 0 && o.stop_timeout <= 3600))
    return UsageError(kName, "--stop-timeout must be in (0, 3600] seconds");

  std::vector<std::string> warnings;
  auto job = config::LoadJobConfig(args["job"].as<std::string>(), &warnings);
  if (!job.ok()) return UsageError(kName, job.status().message());
  for (const auto& w : warnings) std::fprintf(stderr, "murmur job relink: warning: %s\n", w.c_str());
  const proto::JobSpec& spec = job->spec();
  if (!engine::IsLinkAware(spec.topology()))
    return UsageError(kName, "job " + job->job_id() + "'s topology '" + spec.topology() +
                                 "' is not chosen from measured links (link-aware:D or link-aware-ring): "
                                 "nothing to follow");
  if (engine::StateFollowsGraph(spec))
    return UsageError(kName, "job " + job->job_id() +
                                 " keeps CHOCO's public copies of its neighbours' models, which hold only on "
                                 "the graph they were made on: it cannot change graph (a full-model "
                                 "compression such as none, fp16 or int8 can)");
  if (Status hashed = FillModelHash(args["job"].as<std::string>(), "relink", &*job, &o.artifacts);
      !hashed.ok())
    return UsageError(kName, hashed.message());
  auto ctx = LoadOperatorContext(args);
  if (!ctx.ok()) return UsageError(kName, ctx.status().message());
  while (true) {
    const Pass pass = RelinkOnce(*ctx, *job, o);
    std::fflush(stdout);
    if (pass == Pass::kFailed) return kExitFailure;
    if (pass == Pass::kEnded || every == 0) return kExitOk;
    std::this_thread::sleep_for(std::chrono::duration<double>(every));
  }
}

}  // namespace murmur::cli
