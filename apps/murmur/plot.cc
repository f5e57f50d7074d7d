#include "apps/murmur/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "apps/murmur/command.h"
#include "sim/run/metrics.h"

namespace murmur::cli {

namespace {

// A label as a gnuplot single-quoted string ('' is a quote inside it).
std::string Quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// Canvas and legend geometry, in pixels of the 11-point pngcairo font.
constexpr int kWidth = 1800;       // three panels
constexpr int kPanelHeight = 500;  // the panels, their titles, ticks and axis labels
constexpr int kKeyLine = 20;       // one legend row
constexpr int kMaxKeyColumns = 4;

// A run of a language model reports perplexity, not accuracy: its points
// carry no accuracy at all (murmur sim prints perplexity, exp(loss), for
// text datasets).
bool LanguageModelRuns(const std::vector<std::vector<sim::EvalPoint>>& runs) {
  for (const auto& run : runs)
    for (const sim::EvalPoint& p : run)
      if (p.avg_acc != 0 || p.acc_mean != 0 || p.acc_max != 0) return false;
  return true;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string PlotScript(const std::vector<std::vector<sim::EvalPoint>>& runs,
                       const std::vector<std::string>& labels, const std::string& png_path) {
  // The legend: one entry per run and one saying what the dashes are.
  const int entries = static_cast<int>(runs.size()) + 1;
  const int columns = std::min(entries, kMaxKeyColumns);
  const int rows = (entries + columns - 1) / columns;
  const int key_height = rows * kKeyLine + 2 * kKeyLine;
  const int height = kPanelHeight + key_height;
  // The panels' bottom border sits above the legend with room for the tick
  // labels and the x axis label (70 px).
  const double panel_bottom = static_cast<double>(key_height + 70) / height;
  const double key_top = static_cast<double>(key_height) / height;
  // Language models are drawn by test perplexity (exp of the loss, on a log
  // scale), the others by test accuracy.
  const bool perplexity = LanguageModelRuns(runs);
  const std::string measure = perplexity ? "test perplexity" : "test accuracy";
  std::ostringstream script;
  script << (EndsWith(png_path, ".svg") ? "set terminal svg size " : "set terminal pngcairo size ") << kWidth
         << "," << height << " font ',11'\n"
         << "set output " << Quoted(png_path) << "\n";
  for (std::size_t r = 0; r < runs.size(); ++r) {
    script << "$run" << r << " << EOD\n";
    for (const auto& p : runs[r]) {
      const double model = perplexity ? std::exp(p.avg_loss) : p.avg_acc;
      const double nodes = perplexity ? std::exp(p.loss_mean) : p.acc_mean;
      script << p.round << ' ' << model << ' ' << nodes << ' ' << p.bytes_sent / 1e6 << ' ' << p.virtual_s
             << '\n';
    }
    script << "EOD\n";
  }
  script << "set multiplot layout 1,3\n"
         << "set grid\n"
         << (perplexity ? "set logscale y\n" : "set yrange [0:1]\n") << "set bmargin at screen "
         << panel_bottom << "\n"
         << "set key at screen 0.5, screen " << key_top << " center top vertical maxrows " << rows
         << " box\n";
  std::string rounds_plot = "plot ", bytes_plot = "plot ", time_plot = "plot ";
  for (std::size_t r = 0; r < runs.size(); ++r) {
    const std::string data = "$run" + std::to_string(r);
    const std::string colour = " linecolor " + std::to_string(r + 1) + " pointtype " + std::to_string(r + 1);
    const std::string label = r < labels.size() ? labels[r] : "run " + std::to_string(r);
    rounds_plot += data + " using 1:2 with linespoints" + colour + " title " + Quoted(label) + ", " + data +
                   " using 1:3 with lines dashtype 2 linecolor " + std::to_string(r + 1) + " notitle, ";
    const std::string more = r + 1 < runs.size() ? ", " : "\n";
    bytes_plot += data + " using 4:2 with linespoints" + colour + " notitle" + more;
    time_plot += data + " using 5:2 with linespoints" + colour + " notitle" + more;
  }
  rounds_plot +=
      "NaN with lines dashtype 2 linecolor 'black' title 'dashed: node mean (solid: averaged model)'\n";
  script << "set title '" << measure << " vs rounds'\nset xlabel 'round'\nset ylabel '"
         << (perplexity ? "perplexity" : "accuracy") << "'\n"
         << rounds_plot;
  script << "unset key\nset title '" << measure
         << " vs data sent'\nset xlabel 'MB sent (all nodes)'\nset logscale x\n"
         << bytes_plot;
  // Simulated time: what communication-efficient training is for (time to accuracy on slow links).
  script << "set title '" << measure << " vs virtual time'\nset xlabel 'virtual seconds'\nunset logscale x\n"
         << time_plot << "unset multiplot\n";
  return script.str();
}

Status PlotMetrics(const std::vector<std::vector<sim::EvalPoint>>& runs,
                   const std::vector<std::string>& labels, const std::string& png_path,
                   const std::string& script_path) {
  if (!EndsWith(png_path, ".png") && !EndsWith(png_path, ".svg"))
    return Status::InvalidArgument("--out '" + png_path + "': the plot is written as .png or .svg");
  const std::filesystem::path parent = std::filesystem::path(png_path).parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent))
    return Status::NotFound("--out '" + png_path + "': no directory '" + parent.string() + "'");
  for (std::size_t r = 0; r < runs.size(); ++r)
    if (runs[r].empty())
      return Status::InvalidArgument("'" + (r < labels.size() ? labels[r] : std::to_string(r)) +
                                     "' has no rows of metrics to plot");
  const std::string script = PlotScript(runs, labels, png_path);
  if (!script_path.empty()) {
    std::ofstream out(script_path);
    out << script;
    if (!out.flush()) return Status::Internal("cannot write the gnuplot script '" + script_path + "'");
  }
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    return Status::FailedPrecondition(
        "gnuplot is not installed (apt-get install gnuplot-nox); no plot drawn");
  }
  // gnuplot reads the script on its standard input; its errors pass through
  // on stderr, and nothing it writes reaches murmur's standard output (were
  // `set output` to fail, the image would go there).
  FILE* gnuplot = popen("gnuplot >/dev/null", "w");
  if (gnuplot == nullptr) return Status::Internal("cannot run gnuplot");
  const bool written = std::fwrite(script.data(), 1, script.size(), gnuplot) == script.size();
  if (pclose(gnuplot) != 0 || !written) return Status::Internal("gnuplot failed drawing '" + png_path + "'");
  return Status::Ok();
}

namespace {

// murmur plot --out FILE.png METRICS.csv [METRICS2.csv ...]
int RunPlot(int argc, char** argv) {
  std::string out = "murmur-plot.png", script;
  std::vector<std::string> inputs;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::printf(
          "usage: murmur plot [--out FILE.png|FILE.svg] [--script FILE.gp] METRICS.csv [MORE.csv ...]\n\n"
          "Draws test accuracy (language models: test perplexity) versus rounds, megabytes sent and\n"
          "virtual time, one curve per metrics file (written by murmur sim --metrics-csv), named by its\n"
          "file name, with the legend below the panels, as PNG or SVG by --out's extension. --script\n"
          "also writes the gnuplot script (data inline) to edit and rerun.\n"
          "Needs gnuplot (Debian: gnuplot-nox).\n");
      return kExitOk;
    }
    if (a == "--out" || a == "-o") {
      if (i + 1 >= argc) return UsageError("plot", "--out needs a file name");
      out = argv[++i];
    } else if (a == "--script") {
      if (i + 1 >= argc) return UsageError("plot", "--script needs a file name");
      script = argv[++i];
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
  // Each curve is named by its file's name without the directory and ".csv".
  std::vector<std::string> labels;
  for (const auto& path : inputs) {
    std::string name = std::filesystem::path(path).filename().string();
    if (name.size() > 4 && name.compare(name.size() - 4, 4, ".csv") == 0) name.resize(name.size() - 4);
    labels.push_back(name);
  }
  Status st = PlotMetrics(runs, labels, out, script);
  if (!st.ok()) return Failure("plot", st.message());
  std::printf("wrote %s\n", out.c_str());
  return kExitOk;
}

}  // namespace

MURMUR_COMMAND("plot", "plot metrics CSV files (accuracy vs rounds, bytes and virtual time) with gnuplot",
               RunPlot);

}  // namespace murmur::cli
