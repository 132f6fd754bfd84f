// `trib plot SWEEP_DIR`: curves.dat (gnuplot's format: one block per trial) and curves.gp,
// drawn on the terminal by gnuplot where it is installed.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "sweep_log.h"
#include "trial_metrics.h"
#include "trib/core/error.h"
#include "trib/sweep/sweep.h"

namespace trib::sweep {

namespace fs = std::filesystem;

namespace {

std::string find_in_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (std::size_t b = 0, e; b <= dirs.size(); b = e + 1) {
    e = dirs.find(':', b);
    if (e == std::string::npos) e = dirs.size();
    fs::path p = fs::path(dirs.substr(b, e - b)) / name;
    if (!p.empty() && ::access(p.c_str(), X_OK) == 0) return p.string();
  }
  return "";
}

// The metric the sweep used, from the copy of its file (accuracy when unreadable).
std::string sweep_metric(const fs::path& dir) {
  std::ifstream in(dir / "sweep.yaml");
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with("metric:")) {
      std::string m = line.substr(7);
      m.erase(0, m.find_first_not_of(" \t"));
      m = m.substr(0, m.find_first_of(" \t#"));
      if (!m.empty()) return m;
    }
  return "accuracy";
}

}  // namespace

int plot_sweep(const std::string& sweep_dir, std::FILE* out) {
  const fs::path dir(sweep_dir);
  std::vector<TrialRecord> trials = SweepLog::replay(dir / "sweep.jsonl", nullptr);
  const std::string metric = sweep_metric(dir);
  const fs::path data = dir / "curves.dat", script = dir / "curves.gp";
  {
    std::ofstream d(data);
    for (const TrialRecord& t : trials) {
      d << "# " << trial_name(t.id) << ' ' << describe(t.params) << '\n';
      for (const MetricPoint& p : read_curve(dir / "trials" / trial_name(t.id), metric)) d << p.step << ' ' << p.value << '\n';
      d << "\n\n";  // gnuplot: a new data set (index)
    }
    TRIB_CHECK(d.good(), IoError, "cannot write '{}'", data.string());
  }
  {
    std::ofstream s(script);
    s << "set xlabel 'step'\nset ylabel '" << metric << "'\nset key outside\n";
    s << "plot for [i=0:" << (trials.empty() ? 0 : trials.size() - 1) << "] '" << data.string()
      << "' index i with linespoints title sprintf('trial %d', i)\n";
  }
  fmt::print(out, "{} trial(s); curves of {} in {}, gnuplot script {}\n", trials.size(), metric, data.string(),
             script.string());
  std::string gnuplot = find_in_path("gnuplot");
  if (gnuplot.empty()) {
    fmt::print(out, "gnuplot is not installed: nothing drawn (apt-get install gnuplot-nox, then `gnuplot -p {}`)\n",
               script.string());
    return 0;
  }
  std::fflush(out);
  // On the terminal: gnuplot's text terminal, so that it works over ssh too.
  std::string command = fmt::format("'{}' -e \"set terminal dumb size 120,32\" '{}'", gnuplot, script.string());
  return std::system(command.c_str()) == 0 ? 0 : 1;
}

}  // namespace trib::sweep
