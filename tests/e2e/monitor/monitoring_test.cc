// Monitoring of a running local cluster: every role serves the Prometheus text format
// (checked by promtool) with values that advance, the launcher's dashboard data lists every
// worker, `trib status` reads the run directory, unknown paths are 404s, metrics.jsonl gets
// per-step rows from every worker, and a monitoring port in use stops the job before it
// starts.
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "e2e/trib_process.h"
#include "trib/monitor/scrape.h"

namespace trib::testing {
namespace {

std::optional<std::string> scrape(int port, const std::string& path = "/metrics") {
  return monitor::http_get("127.0.0.1", port, path, "", 2s);
}

double value(const std::string& text, const std::string& name, const std::string& label = "",
             const std::string& label_value = "") {
  for (const monitor::Sample& s : monitor::parse_text_format(text))
    if (s.name == name && (label.empty() || s.label(label) == label_value)) return s.value;
  return -1;
}

// promtool check metrics < file: its verdict and what it said.
std::pair<int, std::string> promtool_check(const fs::path& file) {
  const std::string out = file.string() + ".promtool";
  const int status = std::system(("promtool check metrics < " + file.string() + " > " + out + " 2>&1").c_str());
  std::ifstream in(out);
  std::string said((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, said};
}

TEST(Monitoring, EveryRoleServesValidAdvancingMetricsWhileAJobRuns) {
  ASSERT_FALSE(find_program("promtool").empty())
      << "promtool is missing: scripts/install-deps.sh test installs it (Debian prometheus)";
  TempDir dir("monitoring");
  const fs::path run = dir.path() / "run";
  const int base = free_port_run(4);  // the launcher, ps 0, workers 0 and 1
  ASSERT_GT(base, 0);
  std::string job = tiny_job("cluster: {ps: 1, workers: 2}\n");
  // Long enough to outlast the checks; SIGTERM then stops it (with a checkpoint, exit 0).
  job.replace(job.find("training: {steps: 40,"), 21, "training: {steps: 200000, eval_every: 500, log_every: 20,");
  const std::string yaml = dir.file("job.yaml", job);
  Trib train("train", {"train", yaml, "--output", run.string(), "--metrics-port", std::to_string(base)});
  const int coordinator = base, ps0 = base + 1, worker0 = base + 2, worker1 = base + 3;
  std::optional<std::string> first;
  ASSERT_TRUE(wait_until({&train}, [&] {
    std::optional<std::string> w = scrape(worker1);
    if (w && value(*w, "trib_steps_total") > 0) first = scrape(worker0);
    return first && value(*first, "trib_steps_total") > 0;
  }, 60s)) << train.output();
  EXPECT_TRUE(train.printed(fmt::format("dashboard at http://127.0.0.1:{}/", coordinator))) << train.output();

  for (const auto& [name, port] : std::vector<std::pair<std::string, int>>{
           {"coordinator", coordinator}, {"ps0", ps0}, {"worker0", worker0}, {"worker1", worker1}}) {
    std::optional<std::string> text = scrape(port);
    ASSERT_TRUE(text) << name << " did not answer at port " << port << "\n" << train.output();
    const fs::path file = dir.path() / (name + ".prom");
    std::ofstream(file) << *text;
    auto [code, said] = promtool_check(file);
    EXPECT_EQ(code, 0) << name << ": promtool check metrics: " << said << "\n" << *text;
  }
  const std::string ps_text = *scrape(ps0);
  EXPECT_GT(value(ps_text, "trib_ps_updates_total"), 0) << ps_text;
  EXPECT_GT(value(ps_text, "trib_ps_bytes_total", "direction", "in"), 0) << ps_text;
  EXPECT_GT(value(ps_text, "trib_ps_staleness_count"), 0) << ps_text;
  EXPECT_NE(ps_text.find("role=\"ps\",index=\"0\""), std::string::npos) << ps_text;
  const std::string coord_text = *scrape(coordinator);
  EXPECT_EQ(value(coord_text, "trib_members", "member_role", "worker"), 2) << coord_text;

  // The worker's values advance.
  std::this_thread::sleep_for(1500ms);
  train.pump();
  const std::string later = *scrape(worker0);
  EXPECT_GT(value(later, "trib_steps_total"), value(*first, "trib_steps_total")) << later;
  EXPECT_GT(value(later, "trib_examples_total"), value(*first, "trib_examples_total"));
  EXPECT_GT(value(later, "trib_step_seconds_count", "phase", "compute"), 0) << later;
  EXPECT_GT(value(later, "trib_learning_rate"), 0) << later;

  // The dashboard's data lists every worker; unknown paths are 404s.
  std::optional<std::string> status = scrape(coordinator, "/api/status");
  ASSERT_TRUE(status);
  nlohmann::json st = nlohmann::json::parse(*status);
  EXPECT_EQ(st["workers"].size(), 2u) << *status;
  EXPECT_EQ(st["servers"].size(), 1u) << *status;
  EXPECT_FALSE(st["ended"].get<bool>());
  std::optional<std::string> page = scrape(coordinator, "/");
  ASSERT_TRUE(page);
  EXPECT_NE(page->find("<canvas"), std::string::npos);
  for (int port : {coordinator, ps0, worker0}) {
    std::string error;
    EXPECT_FALSE(monitor::http_get("127.0.0.1", port, "/no/such/page", "", 2s, &error));
    EXPECT_NE(error.find("HTTP 404"), std::string::npos) << error;
  }

  // `trib status` finds the roles from the run directory.
  TribRun once = run_trib({"status", run.string(), "--once"}, 30s);
  EXPECT_EQ(once.exit_code, 0) << once.output;
  EXPECT_NE(once.output.find("images/s"), std::string::npos) << once.output;
  TribRun json = run_trib({"status", fmt::format("127.0.0.1:{}", coordinator), "--json"}, 30s);
  EXPECT_EQ(json.exit_code, 0) << json.output;
  EXPECT_NE(json.output.find("\"workers\""), std::string::npos) << json.output;

  train.signal(SIGTERM);
  // A dashboard open across the job's end learns that it ended: its data says so before the
  // launcher goes (the page then stops polling; it also says so when the launcher is gone).
  bool saw_ended = false;
  ASSERT_TRUE(wait_until({&train}, [&] {
    if (std::optional<std::string> s = scrape(coordinator, "/api/status"))
      saw_ended = saw_ended || nlohmann::json::parse(*s).value("ended", false);
    return train.exited();
  }, 240s)) << train.output();
  EXPECT_EQ(train.exit_code(), 0) << train.output();
  EXPECT_TRUE(saw_ended) << "/api/status never said the job ended";
  // Per-step rows from both workers.
  std::ifstream in(run / "metrics.jsonl");
  std::set<int> workers;
  int rows = 0;
  for (std::string line; std::getline(in, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j.value("split", "") != "step") continue;
    ++rows;
    workers.insert(j["worker"].get<int>());
    EXPECT_TRUE(j.contains("loss") && j.contains("lr") && j.contains("images_per_s") && j.contains("grad_norm")) << line;
    EXPECT_GT(j["grad_norm"].get<double>(), 0) << line;
  }
  EXPECT_GT(rows, 10);
  EXPECT_EQ(workers, (std::set<int>{0, 1}));
}

// /usr/bin/python3 where it is (Debian's, with python3-protobuf), else python3 from PATH.
std::string python3() { return fs::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3"; }

TEST(Monitoring, ASingleProcessJobWritesTensorBoardScalarsAnIndependentReaderReads) {
  TempDir dir("tensorboard");
  const fs::path run = dir.path() / "run";
  std::string job = tiny_job("");
  job.replace(job.find("training: {steps: 40,"), 21, "training: {steps: 60, eval_every: 30, log_every: 10,");
  job.replace(job.find("strategy: {name: ps, mode: async}"), 33, "");
  const std::string yaml = dir.file("job.yaml", job);
  TribRun r = run_trib({"train", yaml, "--output", run.string()}, 120s);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(run))
    if (e.path().filename().string().starts_with("events.out.tfevents.")) files.push_back(e.path());
  ASSERT_EQ(files.size(), 1u) << "one tfevents file in " << run;
  const fs::path out = dir.path() / "scalars.txt";
  const std::string command = python3() + " " + std::string(TRIB_SOURCE_DIR) + "/tests/e2e/monitor/read_tfevents.py " +
                              files[0].string() + " > " + out.string() + " 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream in(out);
  std::string said((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << command << "\n" << said;
  std::map<std::string, int> count;
  std::istringstream lines(said);
  for (std::string tag, step, value; lines >> tag;) {
    if (tag == "records") break;
    lines >> step >> value;
    ++count[tag];
  }
  EXPECT_EQ(count["loss/worker0"], 6) << said;
  EXPECT_EQ(count["grad_norm/worker0"], 6) << said;
  EXPECT_EQ(count["lr"], 6) << said;
  EXPECT_EQ(count["test/accuracy"], 2) << said;

  // `trib plot RUN_DIR --output F.svg`: its curves side by side.
  const fs::path svg = dir.path() / "curves.svg";
  TribRun plot = run_trib({"plot", run.string(), run.string(), "--output", svg.string()}, 30s);
  ASSERT_EQ(plot.exit_code, 0) << plot.output;
  std::ifstream drawn(svg);
  const std::string text((std::istreambuf_iterator<char>(drawn)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("test accuracy"), std::string::npos) << text;
  EXPECT_GE(std::count(text.begin(), text.end(), '\n'), 10) << text;
  EXPECT_NE(text.find("run worker0"), std::string::npos) << "the per-step loss curve\n" << text;
  // The same figure as a PNG (tests/unit/plot decodes one with an independent reader).
  const fs::path png = dir.path() / "c.png";
  TribRun as_png = run_trib({"plot", run.string(), "--output", png.string()}, 30s);
  ASSERT_EQ(as_png.exit_code, 0) << as_png.output;
  std::ifstream png_in(png, std::ios::binary);
  std::string signature(8, '\0');
  png_in.read(signature.data(), 8);
  EXPECT_EQ(signature, std::string("\x89PNG\r\n\x1a\n", 8));
  TribRun jpg = run_trib({"plot", run.string(), "--output", (dir.path() / "c.jpg").string()}, 30s);
  EXPECT_EQ(jpg.exit_code, 2) << jpg.output;
  EXPECT_NE(jpg.output.find("writes .svg or .png"), std::string::npos) << jpg.output;
}

TEST(Monitoring, PlotDrawsBenchScalingLinesAsImagesPerSecondAgainstWorkers) {
  TempDir dir("plot_scaling");
  const std::string lines = std::string(TRIB_SOURCE_DIR) + "/tests/unit/plot/scaling_lines.txt";
  const fs::path svg = dir.path() / "scaling.svg";
  TribRun r = run_trib({"plot", lines, "--output", svg.string()}, 30s);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("10 scaling point(s)"), std::string::npos) << r.output;
  std::ifstream in(svg);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* want : {"cnn: images/s", "mlp: images/s", "allreduce, 1 Gbit/s, batch 64", "ps1_async, 1 Gbit/s, batch 64",
                           "torch DDP, 1 Gbit/s, batch 64", ">workers<"})
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  TribRun png = run_trib({"plot", lines, "--output", (dir.path() / "scaling.png").string()}, 30s);
  EXPECT_EQ(png.exit_code, 0) << png.output;
  EXPECT_TRUE(fs::exists(dir.path() / "scaling.png"));
  // A file that is neither a run directory nor bench lines is named.
  TribRun bad = run_trib({"plot", dir.file("notes.txt", "bench=engine model=cnn ours_images_per_s=3\n"), "--output",
                          svg.string()}, 30s);
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("notes.txt has no bench=scaling lines"), std::string::npos) << bad.output;
}

// A held port P whose two ports below are free when it is taken, below the kernel's ephemeral
// range (32768 up), where the other tests' ports (the kernel's choice) never land: the base
// P - 2 and ps 0's P - 1 must not be taken by anything else while the job checks them (a port
// of the ephemeral range was, once, and the job named that one instead).
std::unique_ptr<HeldPort> hold_port_with_two_free_below() {
  const int seed = static_cast<int>(::getpid());
  for (int k = 0; k < 200; ++k) {
    const int p = 20002 + (seed + 7 * k) % 12000;
    if (HeldPort(p - 2).listening() && HeldPort(p - 1).listening()) {
      auto held = std::make_unique<HeldPort>(p);
      if (held->listening()) return held;
    }
  }
  return nullptr;
}

TEST(Monitoring, APortInUseStopsTheJobBeforeItStartsNamingThePort) {
  std::unique_ptr<HeldPort> held_port = hold_port_with_two_free_below();
  ASSERT_NE(held_port, nullptr) << "no port below 32768 with two free ports under it";
  const HeldPort& held = *held_port;
  const int port = std::stoi(held.address().substr(held.address().rfind(':') + 1));
  TempDir dir("monitoring_port");
  const std::string yaml = dir.file("job.yaml", tiny_job("cluster: {ps: 1, workers: 1}\n"));
  const fs::path run = dir.path() / "run";
  // The launcher's own port, then a worker's (base + 1 + ps + 0).
  for (int base : {port, port - 2}) {
    TribRun r = run_trib({"train", yaml, "--output", run.string(), "--metrics-port", std::to_string(base)}, 60s);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find(fmt::format("monitoring port {}", port)), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("started ps0"), std::string::npos) << "a process started: " << r.output;
    EXPECT_FALSE(fs::exists(run / "config.yaml")) << r.output;
  }
}

}  // namespace
}  // namespace trib::testing
