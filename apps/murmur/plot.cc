#include "apps/murmur/plot.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "apps/murmur/command.h"
#include "sim/metrics.h"

namespace murmur::cli {

Status PlotMetrics(const std::vector<std::vector<sim::EvalPoint>>& runs,
                   const std::vector<std::string>& labels, const std::string& png_path) {
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    return Status::FailedPrecondition(
        "gnuplot is not installed (apt-get install gnuplot-nox); no plot drawn");
  }
  char dir_template[] = "/tmp/murmur-plot-XXXXXX";
  if (mkdtemp(dir_template) == nullptr)
    return Status::Internal("cannot create a temporary directory for the plot");
  const std::string dir = dir_template;
  std::ostringstream script;
  script << "set terminal pngcairo size 1400,520 font ',11'\n"
         << "set output '" << png_path << "'\n"
         << "set multiplot layout 1,2\n"
         << "set grid\nset key bottom right\nset yrange [0:1]\n";
  std::string rounds_plot = "plot ", bytes_plot = "plot ";
  for (std::size_t r = 0; r < runs.size(); ++r) {
    std::string data = dir + "/run" + std::to_string(r) + ".dat";
    std::ofstream out(data);
    for (const auto& p : runs[r]) {
      out << p.round << ' ' << p.avg_acc << ' ' << p.acc_mean << ' ' << p.bytes_sent / 1e6 << '\n';
    }
    std::string label = r < labels.size() ? labels[r] : "run " + std::to_string(r);
    std::string sep = r + 1 < runs.size() ? ", " : "\n";
    rounds_plot += "'" + data + "' using 1:2 with linespoints title '" + label + " (averaged model)', '" +
                   data + "' using 1:3 with lines dashtype 2 title '" + label + " (node mean)'" + sep;
    bytes_plot += "'" + data + "' using 4:2 with linespoints title '" + label + "'" + sep;
  }
  script << "set title 'test accuracy vs rounds'\nset xlabel 'round'\nset ylabel 'accuracy'\n" << rounds_plot;
  script << "set title 'test accuracy vs data sent'\nset xlabel 'MB sent (all nodes)'\nset logscale x\n"
         << bytes_plot << "unset multiplot\n";
  std::string script_path = dir + "/plot.gp";
  std::ofstream(script_path) << script.str();
  std::string cmd = "gnuplot '" + script_path + "' 2>" + dir + "/gnuplot.err";
  if (std::system(cmd.c_str()) != 0) {
    return Status::Internal("gnuplot failed; see " + dir + "/gnuplot.err");
  }
  return Status::Ok();
}

namespace {

// murmur plot --out FILE.png METRICS.csv [METRICS2.csv ...]
int RunPlot(int argc, char** argv) {
  std::string out = "murmur-plot.png";
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf(
          "usage: murmur plot [--out FILE.png] METRICS.csv [MORE.csv ...]\n\n"
          "Draws test accuracy versus rounds and versus megabytes sent, one curve per metrics file\n"
          "(written by murmur sim --metrics-csv). Needs gnuplot (Debian: gnuplot-nox).\n");
      return kExitOk;
    }
    if (a == "--out" || a == "-o") {
      if (i + 1 >= argc) return UsageError("plot", "--out needs a file name");
      out = argv[++i];
    } else if (a.rfind("--", 0) == 0) {
      return UsageError("plot", "unknown option '" + a + "'");
    } else {
      inputs.push_back(a);
    }
  }
  if (inputs.empty()) return UsageError("plot", "no metrics file given (murmur plot --help)");
  std::vector<std::vector<sim::EvalPoint>> runs;
  for (const auto& path : inputs) {
    auto points = sim::ReadMetricsCsv(path);
    if (!points.ok()) return Failure("plot", points.status().message());
    runs.push_back(std::move(points).value());
  }
  Status st = PlotMetrics(runs, inputs, out);
  if (!st.ok()) return Failure("plot", st.message());
  std::printf("wrote %s\n", out.c_str());
  return kExitOk;
}

}  // namespace

MURMUR_COMMAND("plot", "plot metrics CSV files (accuracy vs rounds and vs bytes) with gnuplot", RunPlot);

}  // namespace murmur::cli
