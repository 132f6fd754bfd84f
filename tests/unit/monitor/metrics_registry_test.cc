// The registry's text format, the parser that reads it back, and the server's HTTP rules.
#include <gtest/gtest.h>

#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <thread>

#include "trib/core/error.h"
#include "trib/monitor/metrics_registry.h"
#include "trib/monitor/metrics_server.h"
#include "trib/monitor/scrape.h"

namespace trib::monitor {
namespace {

using namespace std::chrono_literals;

TEST(MetricsRegistry, RendersFamiliesWithConstantAndOwnLabels) {
  MetricsRegistry reg(Labels{{"role", "worker"}, {"index", "1"}});
  reg.counter("trib_steps_total", "Steps.").add(3);
  reg.gauge("trib_loss", "Loss.").set(0.5);
  reg.counter("trib_bytes_total", "Bytes.", {{"direction", "in"}}).add(10);
  reg.counter("trib_bytes_total", "", {{"direction", "out"}}).add(20);
  const std::string text = reg.render();
  EXPECT_NE(text.find("# HELP trib_steps_total Steps.\n# TYPE trib_steps_total counter\n"
                      "trib_steps_total{role=\"worker\",index=\"1\"} 3\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("trib_loss{role=\"worker\",index=\"1\"} 0.5\n"), std::string::npos) << text;
  EXPECT_NE(text.find("trib_bytes_total{role=\"worker\",index=\"1\",direction=\"in\"} 10\n"), std::string::npos);
  EXPECT_NE(text.find("trib_bytes_total{role=\"worker\",index=\"1\",direction=\"out\"} 20\n"), std::string::npos);
  EXPECT_EQ(&reg.counter("trib_steps_total", ""), &reg.counter("trib_steps_total", "")) << "one series per label set";
  EXPECT_THROW(reg.gauge("trib_steps_total", ""), InvalidArgument);
}

TEST(MetricsRegistry, HistogramBucketsAreCumulativeWithSumAndCount) {
  MetricsRegistry reg;
  Histogram& h = reg.histogram("trib_t_seconds", "T.", {0.1, 1});
  h.observe(0.05);
  h.observe(0.1);  // on a bound: counts in that bucket (le)
  h.observe(0.5);
  h.observe(7);
  const std::string text = reg.render();
  EXPECT_NE(text.find("trib_t_seconds_bucket{le=\"0.1\"} 2\ntrib_t_seconds_bucket{le=\"1\"} 3\n"
                      "trib_t_seconds_bucket{le=\"+Inf\"} 4\ntrib_t_seconds_sum 7.65\ntrib_t_seconds_count 4\n"),
            std::string::npos)
      << text;
  h.set_counts({1, 0, 2}, 9);
  EXPECT_NE(reg.render().find("trib_t_seconds_bucket{le=\"1\"} 1\ntrib_t_seconds_bucket{le=\"+Inf\"} 3\n"),
            std::string::npos);
  EXPECT_THROW(h.set_counts({1}, 0), InvalidArgument);
}

// The training loop observes three histograms per step while scrapes render them: several
// threads observing while another renders lose none of the observations.
TEST(MetricsRegistry, ConcurrentObservationsAreAllCounted) {
  MetricsRegistry reg;
  Histogram& h = reg.histogram("trib_t_seconds", "T.", {1, 2});
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&h, t] {
      for (int i = 0; i < 20000; ++i) h.observe(double(t % 3) + 0.5);  // buckets 1, 2, +Inf, 1
    });
  std::thread reader([&reg] {
    for (int i = 0; i < 50; ++i) reg.render();
  });
  for (std::thread& t : threads) t.join();
  reader.join();
  const Histogram::Snapshot s = h.snapshot();
  EXPECT_EQ(s.cumulative, (std::vector<std::uint64_t>{40000, 60000, 80000}));
  EXPECT_DOUBLE_EQ(s.sum, 20000 * (0.5 + 1.5 + 2.5 + 0.5));
}

TEST(MetricsRegistry, EscapesLabelValuesAndRunsCollectorsAtRender) {
  MetricsRegistry reg(Labels{{"role", "a\"b\\c\nd"}});
  int renders = 0;
  reg.add_collector([&](MetricsRegistry& r) { r.gauge("trib_renders", "Renders.").set(++renders); });
  reg.render();
  const std::string text = reg.render();
  EXPECT_NE(text.find("trib_renders{role=\"a\\\"b\\\\c\\nd\"} 2\n"), std::string::npos) << text;
  const std::vector<Sample> samples = parse_text_format(text);
  ASSERT_EQ(samples.size(), 1u);
  EXPECT_EQ(samples[0].label("role"), "a\"b\\c\nd");
  EXPECT_EQ(samples[0].value, 2);
}

TEST(ParseTextFormat, ReadsSamplesAndRefusesGarbageNamingTheLine) {
  std::vector<Sample> s = parse_text_format("# HELP x y\nx 1\ny{a=\"1\",b=\"2\"} +Inf\nz 3 1700000000\n");
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[1].label("b"), "2");
  EXPECT_TRUE(std::isinf(s[1].value));
  EXPECT_EQ(s[2].value, 3);
  try {
    parse_text_format("x 1\ny{a=\"1\" 2\n");
    FAIL() << "an unclosed label set was accepted";
  } catch (const InvalidArgument& e) {
    EXPECT_NE(std::string(e.what()).find("line 2"), std::string::npos) << e.what();
  }
}

TEST(MetricsServer, ServesMetricsAnswers404ElsewhereAndChecksTheToken) {
  MetricsRegistry reg(Labels{{"role", "worker"}});
  reg.counter("trib_steps_total", "Steps.").add(5);
  MetricsServerOptions o;
  o.pages["/api/x"] = {"application/json", [] { return std::string("{\"ok\":1}"); }};
  MetricsServer server(o, reg);
  std::string error;
  std::optional<std::string> text = http_get("127.0.0.1", server.port(), "/metrics", "", 2s, &error);
  ASSERT_TRUE(text) << error;
  EXPECT_NE(text->find("trib_steps_total{role=\"worker\"} 5"), std::string::npos);
  EXPECT_EQ(http_get("127.0.0.1", server.port(), "/api/x", "", 2s), std::optional<std::string>("{\"ok\":1}"));
  EXPECT_FALSE(http_get("127.0.0.1", server.port(), "/nope", "", 2s, &error));
  EXPECT_NE(error.find("HTTP 404"), std::string::npos) << error;

  MetricsServerOptions secured;
  secured.token = "s3cret";
  MetricsServer guarded(secured, reg);
  EXPECT_FALSE(http_get("127.0.0.1", guarded.port(), "/metrics", "", 2s, &error));
  EXPECT_NE(error.find("HTTP 401"), std::string::npos) << error;
  EXPECT_FALSE(http_get("127.0.0.1", guarded.port(), "/metrics", "wrong", 2s, &error));
  EXPECT_TRUE(http_get("127.0.0.1", guarded.port(), "/metrics", "s3cret", 2s, &error)) << error;
}

TEST(MetricsServer, APortInUseIsRefusedNamingIt) {
  MetricsRegistry reg;
  MetricsServer first({}, reg);
  MetricsServerOptions o;
  o.port = first.port();
  try {
    MetricsServer second(o, reg);
    FAIL() << "a second server bound port " << o.port;
  } catch (const Unavailable& e) {
    EXPECT_NE(std::string(e.what()).find("monitoring port " + std::to_string(o.port)), std::string::npos) << e.what();
  }
}

TEST(RolePort, CoordinatorThenServersThenWorkers) {
  EXPECT_EQ(role_port(9400, "coordinator", 0, 2), 9400);
  EXPECT_EQ(role_port(9400, "ps", 1, 2), 9402);
  EXPECT_EQ(role_port(9400, "worker", 0, 2), 9403);
  EXPECT_THROW(role_port(65535, "worker", 0, 2), InvalidArgument);
  EXPECT_THROW(role_port(9400, "launcher", 0, 2), InvalidArgument);
}

}  // namespace
}  // namespace trib::monitor
