// murmur job submit|status|stop: an operator runs jobs on a fleet of daemons
// (docs/daemon.md, "Operator commands"). Each command talks to every daemon
// named with --daemon / --cluster over its control port.
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "apps/murmur/command.h"
#include "apps/murmur/operator.h"
#include "engine/files.h"
#include "node/config.h"

namespace murmur::cli {
namespace {

constexpr const char* kName = "job";

const char* kUsage =
    "usage: murmur job <action> [options]   (murmur job <action> --help)\n\n"
    "actions:\n"
    "  submit JOB   send a job (JobConfig, protobuf text or JSON) to every daemon\n"
    "  status       each daemon's job: state, round, test accuracy, loss\n"
    "  stop         stop the running job on every daemon (after the current round; checkpointed)\n";

std::string Accuracy(double a) {
  if (a < 0) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4f", a);
  return buf;
}

// Prints one line per daemon; returns the number of daemons that did not answer or refused.
int PrintReplies(const std::vector<DaemonReply>& replies, bool header) {
  if (header)
    std::printf("%-22s %-5s %-12s %-9s %-13s %-9s %s\n", "daemon", "node", "job", "state", "round",
                "accuracy", "loss");
  int bad = 0;
  for (const DaemonReply& r : replies) {
    if (!r.response.ok()) {
      std::printf("%-22s unreachable: %s\n", r.address.c_str(), r.response.status().ToString().c_str());
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
    // The job's error (why it failed, or what last went wrong in it) ends the line.
    std::printf("%-22s %-5u %-12s %-9s %-13s %-9s %.4f%s%s%s%s%s\n", r.address.c_str(), resp.node_id(),
                j.job_id().empty() ? "-" : j.job_id().c_str(), j.state().c_str(), round.c_str(),
                Accuracy(j.test_accuracy()).c_str(), j.train_loss(), privacy.c_str(),
                resp.ok() ? "" : "  refused: ", resp.ok() ? "" : resp.error().c_str(),
                j.error().empty() ? "" : "  error: ", j.error().c_str());
    if (!resp.ok()) ++bad;
  }
  return bad;
}

int Submit(int argc, char** argv) {
  cxxopts::Options options("murmur job submit", "send a job to every daemon; each runs its part of it");
  AddOperatorOptions(options);
  options.add_options()("job", "JobConfig file", cxxopts::value<std::string>())("h,help", "show this help");
  options.parse_positional({"job"});
  options.positional_help("JOB");
  cxxopts::ParseResult args;
  if (auto rc = ParseFlags(options, argc, argv, kName, &args)) return *rc;
  if (!args.count("job")) return UsageError(kName, "submit: missing JOB (a JobConfig file)");
  std::vector<std::string> warnings;
  auto job = engine::LoadJobConfig(args["job"].as<std::string>(), &warnings);
  if (!job.ok()) return UsageError(kName, job.status().ToString());
  for (const auto& w : warnings) std::fprintf(stderr, "murmur job submit: warning: %s\n", w.c_str());
  auto ctx = LoadOperatorContext(args);
  if (!ctx.ok()) return UsageError(kName, ctx.status().ToString());
  proto::ControlRequest request;
  *request.mutable_submit()->mutable_job() = *job;
  const int bad = PrintReplies(CallAll(*ctx, request), true);
  if (bad > 0)
    return Failure(kName, std::to_string(bad) + " of " + std::to_string(ctx->daemons.size()) +
                              " daemons did not take the job");
  std::printf("job %s submitted to %zu daemons\n", job->job_id().c_str(), ctx->daemons.size());
  return kExitOk;
}

int Status(int argc, char** argv) {
  cxxopts::Options options("murmur job status", "each daemon's job: state, round, test accuracy, loss");
  AddOperatorOptions(options);
  // clang-format off
  options.add_options()
    ("wait", "poll every --interval seconds until no daemon runs a job; then print the mean test accuracy")
    ("interval", "seconds between polls with --wait", cxxopts::value<double>()->default_value("5"))
    ("h,help", "show this help");
  // clang-format on
  cxxopts::ParseResult args;
  if (auto rc = ParseFlags(options, argc, argv, kName, &args)) return *rc;
  auto ctx = LoadOperatorContext(args);
  if (!ctx.ok()) return UsageError(kName, ctx.status().ToString());
  const double interval = args["interval"].as<double>();
  if (!(interval >= 0.1 && interval <= 3600))
    return UsageError(kName, "--interval must be in [0.1, 3600] seconds");
  proto::ControlRequest request;
  request.mutable_status();
  for (bool first = true;; first = false) {
    if (!first) std::this_thread::sleep_for(std::chrono::milliseconds(static_cast<int>(interval * 1000)));
    const auto replies = CallAll(*ctx, request);
    const int bad = PrintReplies(replies, first || !args.count("wait"));
    if (!args.count("wait")) return bad > 0 ? kExitFailure : kExitOk;
    bool running = false;
    double sum = 0;
    int evaluated = 0, done = 0;
    for (const auto& r : replies) {
      if (!r.response.ok()) continue;
      const auto& j = r.response->job();
      running = running || j.state() == "running" || j.state() == "draining";
      done += j.state() == "done";
      if (j.test_accuracy() >= 0) {
        sum += j.test_accuracy();
        ++evaluated;
      }
    }
    if (!running) {
      if (evaluated > 0)
        std::printf("mean test accuracy %.4f over %d daemons (%d done)\n", sum / evaluated, evaluated, done);
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
  if (!ctx.ok()) return UsageError(kName, ctx.status().ToString());
  proto::ControlRequest request;
  request.mutable_stop();
  if (args.count("job-id")) request.mutable_stop()->set_job_id(args["job-id"].as<std::string>());
  const int bad = PrintReplies(CallAll(*ctx, request), true);
  return bad > 0 ? kExitFailure : kExitOk;
}

}  // namespace

int RunJob(int argc, char** argv) {
  return DispatchAction(kName, kUsage, "submit, status or stop",
                        {{"submit", Submit}, {"status", Status}, {"stop", Stop}}, argc, argv);
}

MURMUR_COMMAND("job", "submit, watch and stop jobs on running daemons", RunJob);

}  // namespace murmur::cli
