// What `murmur job submit` does once it has read its job file, shared with
// `murmur job relink` (apps/murmur/cmd_job_relink.cc), which submits a
// running job again on the graph its daemons' measured links choose now.
#pragma once

#include <string>
#include <vector>

#include "apps/murmur/operator.h"
#include "core/status.h"
#include "node/artifacts/distribute.h"
#include "proto/node.pb.h"
#include "topology/graph.h"
#include "topology/measured.h"

namespace murmur::cli {

// A TorchScript job's model file, when the operator has a copy (FILE as
// given, else next to the job file), becomes one of the job's artifacts
// (docs/daemon.md "Artifacts"): it is listed in the job and its manifest
// appended to *artifacts, for SubmitToFleet to offer to the daemons; a job
// without model_blake2b gets the copy's hash, and one whose model_blake2b
// differs from the copy's is refused naming both. Without a copy, the job
// needs model_blake2b (each daemon must then hold the file already) or is
// refused naming the field. `action` ("submit", "relink") names the command
// in what it prints.
Status FillModelHash(const std::string& job_file, const char* action, proto::JobConfig* job,
                     std::vector<node::LocalArtifact>* artifacts);

// A link-aware topology (docs/topology.md) is chosen here, from the links
// the daemons measured (each round trip, and each throughput timed from the
// models a job moved: murmur peers), with each edge costing the seconds to
// move `model_bytes` over it, and written into the job as the inline list
// "edges:U V;U V;...": every daemon runs the same graph, and each call
// chooses again from the links as they are then. Prints the choice to
// stderr. Other topologies are left as they are. `choice`, when given,
// receives the measurements and the graph chosen from them.
struct MeasuredChoice {
  topology::MeasuredLinks links;
  topology::Graph graph;
};
Status ChooseMeasuredTopology(const OperatorContext& ctx, double model_bytes, const char* action,
                              proto::JobConfig* job, MeasuredChoice* choice = nullptr);

// Submission is all or nothing: every daemon's status (its node id against
// the job's nodes), then `artifacts` given to each (uploaded to
// `artifact_uploads` daemons when none has a file, fetched by the others
// from those that hold it), then a prepare on each (the daemon checks the job as it
// would start it), then, when all took it, a commit on each; a refusal
// aborts the prepared ones, and a commit that fails stops those that started.
// Prints the daemons' replies; returns the exit code.
int SubmitToFleet(const OperatorContext& ctx, const proto::JobConfig& job, bool partial,
                  const std::vector<node::LocalArtifact>& artifacts, std::size_t artifact_uploads = 1);

// murmur job relink JOB: see apps/murmur/cmd_job_relink.cc.
int Relink(int argc, char** argv);

}  // namespace murmur::cli
