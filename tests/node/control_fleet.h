// Fleet: three idle murmurd daemons on loopback (no job in their configs) and
// an operator, for the control tests (control_test.cc, control_faults_test.cc).
#pragma once

#include <set>
#include <string>

#include "proto/node.pb.h"
#include "tests/node/fed_fleet.h"

namespace murmur::node {

// Three idle daemons (no job in their configs) and an operator.
struct Fleet : testing::FedFleet {
  static constexpr NodeId kNodes = 3;

  // `fault_injection`: the daemons whose configs enable `murmur fault`.
  explicit Fleet(std::set<NodeId> fault_injection = {})
      : FedFleet(kNodes, [fault_injection](NodeId i, proto::NodeConfig& c) {
          c.set_fault_injection(fault_injection.count(i) != 0);
        }) {}

  static proto::JobConfig Job(const std::string& id, std::uint64_t rounds) {
    proto::JobConfig job;
    job.set_job_id(id);
    job.mutable_spec()->set_dataset("synthetic:blobs");
    job.mutable_spec()->set_model("softmax");
    job.mutable_spec()->set_nodes(kNodes);
    job.mutable_spec()->set_topology("ring");
    job.mutable_spec()->set_rounds(rounds);
    job.mutable_spec()->set_lr(0.05);
    job.mutable_spec()->set_compression("none");
    job.set_checkpoint_every(5);
    job.mutable_spec()->set_eval_every(10);
    job.mutable_spec()->set_round_timeout(2);
    return job;
  }
};

}  // namespace murmur::node
