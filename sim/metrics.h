// Metrics of a simulation: one EvalPoint per evaluation, written as CSV or
// JSON lines, and read back for plots.
//
// Thread-safety: values; writers belong to one thread.
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"

namespace murmur::sim {

struct EvalPoint {
  std::uint64_t round = 0;  // rounds completed by every node (gossip learning: mean wake-ups)
  double virtual_s = 0;     // simulated time
  double wall_s = 0;        // real time since the run started
  double acc_mean = 0;      // test accuracy of the evaluated nodes' own models
  double acc_min = 0;
  double acc_max = 0;
  double loss_mean = 0;  // their mean test loss
  double avg_acc = 0;    // test accuracy of the average of all models
  double avg_loss = 0;
  double train_loss = 0;         // mean training loss the nodes last reported
  double consensus = 0;          // (1/n) sum_i ||x_i - x_bar||^2
  std::uint64_t bytes_sent = 0;  // all nodes, cumulative, encoded bytes
  std::uint64_t bytes_received = 0;
  std::uint64_t messages_lost = 0;
  std::uint32_t online = 0;  // nodes online at this point
};

// The CSV header and one row per point; JSON lines have the same keys.
std::string CsvHeader();
std::string CsvRow(const EvalPoint& p);
std::string JsonLine(const EvalPoint& p);

// Appends points to a CSV file and/or a JSON-lines file as they come.
class MetricsWriter {
 public:
  // Either path may be empty. Fails when a file cannot be created.
  static Result<std::unique_ptr<MetricsWriter>> Open(const std::string& csv_path,
                                                     const std::string& json_path);
  void Write(const EvalPoint& p);

 private:
  std::ofstream csv_, json_;
};

// Reads a metrics CSV written by MetricsWriter (for `murmur plot`).
Result<std::vector<EvalPoint>> ReadMetricsCsv(const std::string& path);

}  // namespace murmur::sim
