#include "bench/plots.hpp"

#include <sys/stat.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <map>
#include <vector>

namespace ferry::bench {

namespace {

bool make_dir(const std::string& path) {
  return ::mkdir(path.c_str(), 0755) == 0 || errno == EEXIST;
}

// Single quotes for gnuplot strings and the shell.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s)
    out += c == '\'' ? std::string{"'\\''"} : std::string(1, c);
  return out + "'";
}

std::string file_name(std::string series) {
  for (auto& c : series)
    if (c == ' ')
      c = '_';
  return series;
}

void plot_block(std::ofstream& gp, const std::string& png, const std::string& ylabel,
                int column, const std::vector<std::string>& series,
                const std::string& title) {
  gp << "set output '" << png << "'\n"
     << "set title \"" << title << "\" noenhanced\n"
     << "set ylabel '" << ylabel << "'\n"
     << "plot ";
  for (size_t i = 0; i < series.size(); ++i) {
    gp << (i ? ", \\\n     " : "") << "'data/" << file_name(series[i])
       << ".dat' using 1:" << column << " with linespoints title '" << series[i]
       << "' noenhanced lw 2 dt " << (i / 8 + 1);
  }
  gp << "\n";
}

} // namespace

std::string write_plots(const std::string& dir, const bench_report& report,
                        const std::string& title) {
  if (!make_dir(dir) || !make_dir(dir + "/data"))
    return "cannot create '" + dir + "/data'";
  std::map<std::string, std::vector<const point_result*>> by_series;
  std::vector<std::string> order;
  for (const auto& p : report.points) {
    if (!p.ok() || p.bytes < 1024) // the tiny round trip has no curve
      continue;
    auto s = p.series();
    if (!by_series.count(s))
      order.push_back(s);
    by_series[s].push_back(&p);
  }
  if (order.empty())
    return "nothing measured to plot";
  for (const auto& s : order) {
    std::ofstream dat{dir + "/data/" + file_name(s) + ".dat", std::ios::trunc};
    dat << "# bytes  gbps  seconds_median  seconds_min  seconds_max\n";
    for (auto* p : by_series[s])
      dat << p->bytes << " " << p->gbps() << " " << p->seconds.median << " "
          << p->seconds.min << " " << p->seconds.max << "\n";
  }
  {
    std::ofstream gp{dir + "/plots.gp", std::ios::trunc};
    gp << "# ferry bench plots: run `gnuplot plots.gp` in this folder\n"
       << "set terminal pngcairo size 1200,750 noenhanced\n"
       << "set key outside right top\n"
       << "set grid\n"
       << "set logscale x 2\n"
       << "set logscale y 10\n"
       << "set xlabel 'payload bytes (per consumer)'\n"
       << "set format x '%.0b%BB'\n";
    gp << "set format y '%g'\n";
    plot_block(gp, "throughput.png", "GB/s (1e9 bytes/s, aggregate)", 2, order,
               title + ": throughput");
    gp << "set format y '%.0s %cs'\n";
    plot_block(gp, "latency.png", "seconds per run (median)", 3, order,
               title + ": latency");
    if (!gp)
      return "cannot write '" + dir + "/plots.gp'";
  }
  auto cmd = "cd " + quoted(dir) + " && gnuplot plots.gp 2>&1";
  int rc = std::system(cmd.c_str());
  if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) != 0)
    return "gnuplot failed (is gnuplot-nox installed?); data and plots.gp are in "
           + dir;
  return {};
}

} // namespace ferry::bench
