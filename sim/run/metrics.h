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
  double epsilon = 0;        // DP-FedAvg: (epsilon, dp_delta) spent so far; 0 without DP or before any round
  // The last point only: why the run stopped ("rounds done", "time budget",
  // "privacy budget: ...", ...); empty on every other point.
  std::string stop;
};

// The CSV header and one row per point; JSON lines have the same keys. The
// last column, `stop`, is text without commas or quotes (empty but on the last point).
std::string CsvHeader();
std::string CsvRow(const EvalPoint& p);
std::string JsonLine(const EvalPoint& p);

// Appends points to a CSV file and/or a JSON-lines file as they come. A point
// is written when the next one comes, or at Finish with the run's stop reason.
class MetricsWriter {
 public:
  // Either path may be empty. Fails when a file cannot be created.
  static Result<std::unique_ptr<MetricsWriter>> Open(const std::string& csv_path,
                                                     const std::string& json_path);
  void Write(const EvalPoint& p);
  // Writes the last point with `stop` as its stop reason.
  void Finish(const std::string& stop);

 private:
  void Flush();
  std::ofstream csv_, json_;
  std::unique_ptr<EvalPoint> pending_;
};

// Reads a metrics CSV written by MetricsWriter (for `murmur plot`), also one
// of murmur 0.1 (without the epsilon and stop columns).
Result<std::vector<EvalPoint>> ReadMetricsCsv(const std::string& path);

}  // namespace murmur::sim
