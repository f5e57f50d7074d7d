// Plots of simulation metrics, drawn by gnuplot (Debian: gnuplot-nox) run as
// a separate program: accuracy versus rounds, versus megabytes sent and
// versus virtual seconds (time to accuracy, what slow links change); for
// language models (runs with no accuracy: text datasets), perplexity,
// exp(loss), on a log scale instead.
//
// Layout: the three panels side by side; one colour per run in all; the
// legend below the panels, in up to four columns, so that it never covers a
// curve however many runs there are (the canvas grows by its rows). The
// script is self-contained (the data as inline datablocks), so a user can
// keep it (`murmur plot --script`), edit it and run gnuplot on it.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "sim/run/metrics.h"

namespace murmur::cli {

// The gnuplot script that draws `runs` (one curve per run, named by
// `labels`) into `png_path`, an SVG where it ends in .svg, else a PNG.
std::string PlotScript(const std::vector<std::vector<sim::EvalPoint>>& runs,
                       const std::vector<std::string>& labels, const std::string& png_path);

// Draws PlotScript's plot with gnuplot; when `script_path` is not empty the
// script is also written there. Refuses, before running gnuplot, an output
// that is not .png or .svg or whose directory does not exist, and a run
// without points.
Status PlotMetrics(const std::vector<std::vector<sim::EvalPoint>>& runs,
                   const std::vector<std::string>& labels, const std::string& png_path,
                   const std::string& script_path = "");

}  // namespace murmur::cli
