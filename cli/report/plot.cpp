#include "cli/report/plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "cli/options/output_file.h"
#include "model/error.h"

namespace papaya::cli {
namespace {

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) out += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return out + "\"";
}

// The format by the path's extension: "svg" or "png".
std::string format_of(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".svg" || ext == ".png") return ext.substr(1);
  throw InputError("--plot " + path + ": expected a .svg or .png file");
}

std::string terminal_for(const std::string& path, size_t panels) {
  const int width = 560 * static_cast<int>(std::max<size_t>(panels, 1)), height = 440;
  if (format_of(path) == "svg")
    return "svg size " + std::to_string(width) + "," + std::to_string(height) + " dynamic background 'white'";
  return "pngcairo size " + std::to_string(width) + "," + std::to_string(height);
}

// One datablock per series and kind, so that gnuplot reads the data inline.
std::string datablock(const std::string& name, const std::vector<std::pair<double, double>>& xy) {
  std::ostringstream out;
  out.precision(10);
  out << "$" << name << " << EOD\n";
  for (const auto& [x, y] : xy) out << x << " " << y << "\n";
  out << "EOD\n";
  return out.str();
}

// Tics a power of two apart, about eight at most over the batches drawn.
long tic_factor(const std::vector<PlotPanel>& panels) {
  double most = 1;
  for (const auto& panel : panels) {
    for (const auto& series : panel.series) {
      for (const auto* xy : {&series.curve, &series.points}) {
        for (const auto& [x, y] : *xy) most = std::max(most, x);
      }
    }
  }
  return 1L << static_cast<int>(std::ceil(std::log2(most) / 8));
}

// `format_of` names the format by its extension; gnuplot writes to `output`.
std::string script(const std::string& format_of, const std::string& output, const std::string& title,
                   const std::vector<PlotPanel>& panels) {
  std::ostringstream s;
  s << "set terminal " << terminal_for(format_of, panels.size()) << "\n"
    << "set output " << quoted(output) << "\n"
    << "set multiplot layout 1," << panels.size() << " title " << quoted(title) << "\n"
    << "set grid\nset xlabel 'batch size'\n"
    << "set logscale x 2\nset format x '%.0f'\n"
    << "set xtics " << tic_factor(panels) << "\n";
  // Colours follow the series' names so that a strategy looks the same in every panel.
  std::vector<std::string> names;
  for (const auto& panel : panels) {
    for (const auto& series : panel.series) {
      if (std::find(names.begin(), names.end(), series.name) == names.end()) names.push_back(series.name);
    }
  }
  for (size_t p = 0; p < panels.size(); ++p) {
    const PlotPanel& panel = panels[p];
    // A series has the same colour in every panel: a panel has a key only if
    // it draws something an earlier one did not name.
    bool named = !panel.hline;
    for (const auto& series : panel.series) {
      bool earlier = false;
      for (size_t q = 0; q < p; ++q) {
        for (const auto& other : panels[q].series) earlier = earlier || other.name == series.name;
      }
      named = named && earlier;
    }
    s << (named ? "unset key\n" : "set key top left Left reverse box opaque font ',9'\n");
    std::vector<std::string> plots;
    for (size_t i = 0; i < panel.series.size(); ++i) {
      const PlotSeries& series = panel.series[i];
      const size_t colour = std::find(names.begin(), names.end(), series.name) - names.begin() + 1;
      const std::string id = "p" + std::to_string(p) + "s" + std::to_string(i);
      if (!series.curve.empty()) {
        s << datablock(id + "c", series.curve);
        plots.push_back("$" + id + "c with lines lw 2 lc " + std::to_string(colour) + " title " + quoted(series.name));
      }
      if (!series.points.empty()) {
        s << datablock(id + "m", series.points);
        plots.push_back("$" + id + "m with points pt 7 ps 0.8 lc " + std::to_string(colour) + " " +
                        (series.curve.empty() ? "title " + quoted(series.name) : std::string("notitle")));
      }
    }
    if (panel.hline) {
      plots.push_back(std::to_string(*panel.hline) + " with lines dt 2 lw 2 lc rgb 'black' title " + quoted(panel.hline_label));
    }
    s << "set title " << quoted(panel.title) << "\nset ylabel " << quoted(panel.y_label) << "\n";
    if (plots.empty()) {
      s << "set label 1 'no data' at graph 0.5, graph 0.5 center\nplot [1:2] NaN notitle\nunset label 1\n";
      continue;
    }
    s << "plot ";
    for (size_t i = 0; i < plots.size(); ++i) s << (i ? ", \\\n     " : "") << plots[i];
    s << "\n";
  }
  s << "unset multiplot\n";
  return s.str();
}

}  // namespace

void write_plot(const std::string& path, const std::string& title, const std::vector<PlotPanel>& panels) {
  const std::filesystem::path target(path);
  const std::string tmp = (target.parent_path() / ("." + target.filename().string() + ".tmp")).string();
  const std::string text = script(path, tmp, title, panels);
  FILE* gnuplot = popen("gnuplot 2>&1", "w");
  if (!gnuplot) throw InputError("--plot " + path + ": cannot run gnuplot (install gnuplot-nox)");
  std::fwrite(text.data(), 1, text.size(), gnuplot);
  const int status = pclose(gnuplot);
  if (status != 0 || !std::filesystem::exists(tmp) || std::filesystem::file_size(tmp) == 0) {
    std::filesystem::remove(tmp);
    throw InputError("--plot " + path + ": gnuplot failed" + (status == 127 << 8 ? " (is gnuplot installed?)" : ""));
  }
  std::filesystem::rename(tmp, target);
}

void check_plot_path(const std::string& path) {
  format_of(path);
  check_writable(path, "--plot");
}

}  // namespace papaya::cli
