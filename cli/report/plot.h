#pragma once
// Figures for people: panels of curves (predictions) and points (measurements)
// against the batch size, with an optional horizontal line (the memory
// budget) — the figure of the PAPAYA paper. Drawn by gnuplot into SVG or PNG.
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace papaya::cli {

struct PlotSeries {
  std::string name;                               // "quantize-4"
  std::vector<std::pair<double, double>> curve;   // (batch, value): drawn as a line
  std::vector<std::pair<double, double>> points;  // (batch, value): drawn as markers
};

struct PlotPanel {
  std::string title;    // "peak memory"
  std::string y_label;  // "GiB"
  std::vector<PlotSeries> series;
  std::optional<double> hline;  // e.g. the budget, in y units
  std::string hline_label;
  std::string points_label = "measured";  // what the series' markers are
};

// Draws the panels side by side into `path`, whose extension (.svg, .png)
// picks the format; a series keeps its colour across panels. Written
// atomically. Throws InputError for another extension, a missing gnuplot, or
// a gnuplot failure.
void write_plot(const std::string& path, const std::string& title, const std::vector<PlotPanel>& panels);

// Checks, before the long work, that `path` names a figure write_plot can make
// (.svg or .png) in a folder that can be written; InputError ("--plot PATH:
// ...") otherwise.
void check_plot_path(const std::string& path);

}  // namespace papaya::cli
