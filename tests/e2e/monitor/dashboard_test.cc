// The launcher's dashboard in headless Chromium (Debian chromium): the page loads with no
// console errors, shows every worker, and its curves advance (two screenshots seconds apart
// differ). The second screenshot is kept as a test artifact: BUILD/Testing/dashboard.png.
#include <fstream>
#include <future>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "e2e/trib_process.h"
#include "trib/monitor/scrape.h"

namespace trib::testing {
namespace {

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Chromium headless on `url`: `what` is "--screenshot=FILE" or "--dump-dom"; stdout to `out`,
// its log (console messages included) to `log`. Returns its exit status.
int chromium(const std::string& program, const std::string& url, const std::string& what, const fs::path& out,
             const fs::path& log) {
  const std::string command = program +
                              " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars "
                              "--no-first-run --window-size=1400,1100 --virtual-time-budget=5000 "
                              "--enable-logging=stderr --v=0 " +
                              what + " " + url + " > " + out.string() + " 2> " + log.string();
  const int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Whether a TCP connection to local port `port` is established (/proc/net/tcp: local address
// "HEX_IP:HEX_PORT", state 01).
bool has_established_connection(int port) {
  std::ifstream in("/proc/net/tcp");
  std::string line;
  std::getline(in, line);  // the header
  const std::string local_port = fmt::format(":{:04X}", port);
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    fields >> slot >> local >> remote >> state;
    if (local.size() > 5 && local.ends_with(local_port) && state == "01") return true;
  }
  return false;
}

TEST(Dashboard, LoadsWithoutConsoleErrorsShowsEveryWorkerAndItsCurvesAdvance) {
  const std::string program = find_program("chromium");
  ASSERT_FALSE(program.empty()) << "chromium is missing: scripts/install-deps.sh test installs it";
  TempDir dir("dashboard");
  const int base = free_port_run(4);  // the launcher, ps 0, workers 0 and 1 (base + 1 + ...)
  ASSERT_GT(base, 0);
  std::string job = tiny_job("cluster: {ps: 1, workers: 2}\n");
  // Long enough to outlast the checks; stopped at the end.
  job.replace(job.find("training: {steps: 40,"), 21, "training: {steps: 200000, eval_every: 500,");
  const std::string yaml = dir.file("job.yaml", job);
  Trib train("train", {"train", yaml, "--output", (dir.path() / "run").string(), "--metrics-port", std::to_string(base)});
  const std::string url = fmt::format("http://127.0.0.1:{}/", base);
  ASSERT_TRUE(wait_until({&train}, [&] {
    std::optional<std::string> s = monitor::http_get("127.0.0.1", base, "/api/status", "", 2s);
    if (!s) return false;
    nlohmann::json st = nlohmann::json::parse(*s);
    return st["workers"].size() == 2 && st["workers"][1]["step"].is_number() && st["workers"][1]["step"].get<double>() > 0;
  }, 60s)) << train.output();

  const fs::path first = dir.path() / "first.png", second = dir.path() / "second.png";
  const fs::path dom = dir.path() / "dom.html", log = dir.path() / "chromium.log";
  ASSERT_EQ(chromium(program, url, "--dump-dom", dom, log), 0) << slurp(log);
  train.pump();
  const std::string page = slurp(dom);
  const std::string console = slurp(log);
  for (const char* worker : {"<td>worker0</td>", "<td>worker1</td>"})
    EXPECT_NE(page.find(worker), std::string::npos) << worker << " not shown:\n" << page;
  EXPECT_NE(page.find("<td>ps</td>"), std::string::npos) << page;
  // The members table lists them by role, then index, whatever order they joined in.
  const std::size_t ps0 = page.find("<td>ps</td><td>0</td>"), w0 = page.find("<td>worker</td><td>0</td>"),
                    w1 = page.find("<td>worker</td><td>1</td>");
  ASSERT_NE(w1, std::string::npos) << page;
  EXPECT_LT(ps0, w0) << page;
  EXPECT_LT(w0, w1) << page;
  EXPECT_EQ(console.find("Uncaught"), std::string::npos) << console;
  EXPECT_EQ(console.find("CONSOLE"), std::string::npos) << "the page logged to its console:\n" << console;

  ASSERT_EQ(chromium(program, url, "--screenshot=" + first.string(), dir.path() / "shot1.out", log), 0) << slurp(log);
  wait_until({&train}, [] { return false; }, 3s);
  ASSERT_EQ(chromium(program, url, "--screenshot=" + second.string(), dir.path() / "shot2.out", log), 0) << slurp(log);
  ASSERT_TRUE(fs::exists(first) && fs::exists(second)) << slurp(log);
  EXPECT_NE(slurp(first), slurp(second)) << "the dashboard did not change in 3 s";
  std::error_code ec;
  fs::create_directories(fs::path(TRIB_BINARY_DIR) / "Testing", ec);
  fs::copy_file(second, fs::path(TRIB_BINARY_DIR) / "Testing" / "dashboard.png", fs::copy_options::overwrite_existing,
                ec);
  EXPECT_FALSE(ec) << ec.message();

  // A page left open across the job's end says so and stops polling. Under a virtual time
  // budget Chromium runs the page's timers at once but waits for each poll's answer: the
  // budget outlasts the job, which SIGTERM ends meanwhile (with a checkpoint).
  const fs::path last = dir.path() / "ended.html";
  auto open_page = std::async(std::launch::async, [&] {
    return std::system((program + " --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run "
                                  "--virtual-time-budget=600000 --dump-dom " + url + " > " + last.string() +
                        " 2> /dev/null").c_str());
  });
  // Chromium starts (slowly on a loaded machine), loads the page and polls: end the job only
  // once a connection to the dashboard is open, or the page would find no server at all.
  ASSERT_TRUE(wait_until({&train}, [&] { return has_established_connection(base); }, 90s)) << train.output();
  wait_until({&train}, [] { return false; }, 2s);
  train.signal(SIGTERM);
  ASSERT_TRUE(wait_exit(train, 120s)) << train.output();
  EXPECT_EQ(train.exit_code(), 0) << train.output();
  ASSERT_EQ(open_page.wait_for(120s), std::future_status::ready) << "the page kept polling after the job ended";
  EXPECT_NE(slurp(last).find("class=\"ended\">job ended"), std::string::npos) << slurp(last);
}

}  // namespace
}  // namespace trib::testing
