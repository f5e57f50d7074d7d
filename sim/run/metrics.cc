#include "sim/run/metrics.h"

#include <cstdio>
#include <sstream>

namespace murmur::sim {

namespace {

constexpr const char* kColumns =
    "round,virtual_s,wall_s,acc_mean,acc_min,acc_max,loss_mean,avg_acc,avg_loss,train_loss,consensus,"
    "bytes_sent,bytes_received,messages_lost,online";

// A stop reason fit for a CSV cell and a JSON string: no commas, quotes or backslashes.
std::string Plain(const std::string& text) {
  std::string out = text;
  for (char& c : out) {
    if (c == ',') c = ';';
    if (c == '"' || c == '\\' || static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return out;
}

}  // namespace

std::string CsvHeader() { return std::string(kColumns) + ",epsilon,stop"; }

std::string CsvRow(const EvalPoint& p) {
  char buf[512];
  std::snprintf(
      buf, sizeof(buf), "%llu,%.6f,%.3f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6f,%.6g,%llu,%llu,%llu,%u,%.6g,",
      static_cast<unsigned long long>(p.round), p.virtual_s, p.wall_s, p.acc_mean, p.acc_min, p.acc_max,
      p.loss_mean, p.avg_acc, p.avg_loss, p.train_loss, p.consensus,
      static_cast<unsigned long long>(p.bytes_sent), static_cast<unsigned long long>(p.bytes_received),
      static_cast<unsigned long long>(p.messages_lost), p.online, p.epsilon);
  return buf + Plain(p.stop);
}

std::string JsonLine(const EvalPoint& p) {
  char buf[640];
  std::snprintf(buf, sizeof(buf),
                "{\"round\":%llu,\"virtual_s\":%.6f,\"wall_s\":%.3f,\"acc_mean\":%.6f,\"acc_min\":%.6f,"
                "\"acc_max\":%.6f,\"loss_mean\":%.6f,\"avg_acc\":%.6f,\"avg_loss\":%.6f,\"train_loss\":%.6f,"
                "\"consensus\":%.6g,\"bytes_sent\":%llu,\"bytes_received\":%llu,\"messages_lost\":%llu,"
                "\"online\":%u,\"epsilon\":%.6g,\"stop\":\"",
                static_cast<unsigned long long>(p.round), p.virtual_s, p.wall_s, p.acc_mean, p.acc_min,
                p.acc_max, p.loss_mean, p.avg_acc, p.avg_loss, p.train_loss, p.consensus,
                static_cast<unsigned long long>(p.bytes_sent),
                static_cast<unsigned long long>(p.bytes_received),
                static_cast<unsigned long long>(p.messages_lost), p.online, p.epsilon);
  return buf + Plain(p.stop) + "\"}";
}

Result<std::unique_ptr<MetricsWriter>> MetricsWriter::Open(const std::string& csv_path,
                                                           const std::string& json_path) {
  auto w = std::make_unique<MetricsWriter>();
  if (!csv_path.empty()) {
    w->csv_.open(csv_path, std::ios::trunc);
    if (!w->csv_) return Status::NotFound("cannot create metrics file '" + csv_path + "'");
    w->csv_ << CsvHeader() << '\n';
  }
  if (!json_path.empty()) {
    w->json_.open(json_path, std::ios::trunc);
    if (!w->json_) return Status::NotFound("cannot create metrics file '" + json_path + "'");
  }
  return w;
}

void MetricsWriter::Write(const EvalPoint& p) {
  Flush();
  pending_ = std::make_unique<EvalPoint>(p);
}

void MetricsWriter::Finish(const std::string& stop) {
  if (pending_) pending_->stop = stop;
  Flush();
}

void MetricsWriter::Flush() {
  if (!pending_) return;
  if (csv_.is_open()) csv_ << CsvRow(*pending_) << '\n' << std::flush;
  if (json_.is_open()) json_ << JsonLine(*pending_) << '\n' << std::flush;
  pending_.reset();
}

Result<std::vector<EvalPoint>> ReadMetricsCsv(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Status::NotFound("metrics file '" + path + "' cannot be opened");
  std::string line;
  if (!std::getline(in, line) || (line != CsvHeader() && line != kColumns)) {
    return Status::InvalidArgument(path + ":1: not a murmur metrics CSV (unexpected header)");
  }
  const bool with_stop = line == CsvHeader();
  std::vector<EvalPoint> out;
  std::size_t lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    EvalPoint p;
    unsigned long long round = 0, sent = 0, received = 0, lost = 0;
    unsigned online = 0;
    int got =
        std::sscanf(line.c_str(), "%llu,%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf,%lf,%llu,%llu,%llu,%u", &round,
                    &p.virtual_s, &p.wall_s, &p.acc_mean, &p.acc_min, &p.acc_max, &p.loss_mean, &p.avg_acc,
                    &p.avg_loss, &p.train_loss, &p.consensus, &sent, &received, &lost, &online);
    if (got != 15)
      return Status::InvalidArgument(path + ":" + std::to_string(lineno) + ": expected 15 fields");
    if (with_stop) {
      // ",epsilon,stop" after the 15th field.
      std::size_t at = 0;
      for (int commas = 0; commas < 15 && at != std::string::npos; ++commas) at = line.find(',', at + 1);
      if (at == std::string::npos || std::sscanf(line.c_str() + at + 1, "%lf", &p.epsilon) != 1)
        return Status::InvalidArgument(path + ":" + std::to_string(lineno) + ": expected an epsilon field");
      const std::size_t stop = line.find(',', at + 1);
      if (stop == std::string::npos)
        return Status::InvalidArgument(path + ":" + std::to_string(lineno) + ": expected a stop field");
      p.stop = line.substr(stop + 1);
    }
    p.round = round;
    p.bytes_sent = sent;
    p.bytes_received = received;
    p.messages_lost = lost;
    p.online = online;
    out.push_back(p);
  }
  return out;
}

}  // namespace murmur::sim
