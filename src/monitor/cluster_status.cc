#include "trib/monitor/cluster_status.h"

#include <algorithm>
#include <cmath>
#include <future>

#include <fmt/format.h>

namespace trib::monitor {

std::vector<Endpoint> job_endpoints(const std::string& host, int base, bool cluster, int ps, int max_workers) {
  if (!cluster) return {{"worker", 0, host, base}};
  std::vector<Endpoint> out{{"coordinator", 0, host, base}};
  for (int i = 0; i < ps; ++i) out.push_back({"ps", i, host, base + 1 + i});
  for (int i = 0; i < max_workers; ++i) out.push_back({"worker", i, host, base + 1 + ps + i});
  return out;
}

namespace {

// The samples of one scrape, by name and an optional label.
struct Scrape {
  std::vector<Sample> samples;
  double get(const std::string& name, const std::string& key = "", const std::string& value = "",
             double absent = NAN) const {
    for (const Sample& s : samples)
      if (s.name == name && (key.empty() || s.label(key) == value)) return s.value;
    return absent;
  }
};

// NaN (no value yet) becomes null in JSON.
nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

double mean(const Scrape& s, const std::string& phase) {
  const double sum = s.get("trib_step_seconds_sum", "phase", phase);
  const double count = s.get("trib_step_seconds_count", "phase", phase);
  return count > 0 ? sum / count : NAN;
}

// A stream worker's lag over its partitions (null: not a stream job, or unknown).
double total_lag(const Scrape& s) {
  double total = NAN;
  for (const Sample& x : s.samples)
    if (x.name == "trib_stream_consumer_lag" && x.value >= 0) total = (std::isnan(total) ? 0 : total) + x.value;
  return total;
}

nlohmann::json worker_row(const Endpoint& e, const Scrape& s) {
  const double fresh_n = s.get("trib_stream_freshness_seconds_count");
  return {{"index", e.index},
          {"consumer_lag", number(total_lag(s))},
          {"freshness_s", number(fresh_n > 0 ? s.get("trib_stream_freshness_seconds_sum") / fresh_n : NAN)},
          {"events_per_s", number(s.get("trib_stream_events_per_second"))},
          {"step", number(s.get("trib_step"))},
          {"steps", number(s.get("trib_steps_total"))},
          {"examples", number(s.get("trib_examples_total"))},
          {"loss", number(s.get("trib_loss"))},
          {"lr", number(s.get("trib_learning_rate"))},
          {"images_per_s", number(s.get("trib_images_per_second"))},
          {"wait_s", number(mean(s, "wait"))},
          {"compute_s", number(mean(s, "compute"))},
          {"exchange_s", number(mean(s, "exchange"))},
          {"eval_loss", number(s.get("trib_eval_loss", "split", "test"))},
          {"eval_accuracy", number(s.get("trib_eval_accuracy", "split", "test"))},
          {"checkpoints", number(s.get("trib_checkpoint_seconds_count"))},
          {"checkpoint_s", number(s.get("trib_checkpoint_seconds_sum"))}};
}

nlohmann::json server_row(const Endpoint& e, const Scrape& s) {
  nlohmann::json staleness = nlohmann::json::array();
  double below = 0;
  for (const Sample& x : s.samples)
    if (x.name == "trib_ps_staleness_bucket") {  // cumulative, in bound order
      staleness.push_back(x.value - below);
      below = x.value;
    }
  return {{"index", e.index},
          {"bytes_in", number(s.get("trib_ps_bytes_total", "direction", "in"))},
          {"bytes_out", number(s.get("trib_ps_bytes_total", "direction", "out"))},
          {"requests", number(s.get("trib_ps_requests_total"))},
          {"updates", number(s.get("trib_ps_updates_total"))},
          {"late_drops", number(s.get("trib_ps_late_drops_total"))},
          {"staleness", staleness}};
}

}  // namespace

nlohmann::json gather_status(const std::vector<Endpoint>& endpoints, const std::string& token,
                             std::chrono::milliseconds timeout) {
  // All at once: a role that does not answer costs one timeout, not one each.
  std::vector<std::future<std::optional<std::string>>> answers;
  for (const Endpoint& e : endpoints)
    answers.push_back(std::async(std::launch::async, [&e, &token, timeout] {
      return http_get(e.host, e.port, "/metrics", token, timeout);
    }));
  nlohmann::json out = {{"time", std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count()},
                        {"generation", nullptr},
                        {"members", nlohmann::json::array()},
                        {"workers", nlohmann::json::array()},
                        {"servers", nlohmann::json::array()}};
  for (std::size_t i = 0; i < endpoints.size(); ++i) {
    const Endpoint& e = endpoints[i];
    std::optional<std::string> text = answers[i].get();
    Scrape s;
    if (text) {
      try {
        s.samples = parse_text_format(*text);
      } catch (const std::exception&) {
        text.reset();
      }
    }
    // Worker indices beyond those running (cluster.max_workers) are not members.
    if (!text && e.role == "worker" && e.index > 0) continue;
    out["members"].push_back({{"role", e.role},
                              {"index", e.index},
                              {"up", text.has_value()},
                              {"url", fmt::format("http://{}:{}/metrics", e.host, e.port)}});
    if (!text) continue;
    if (double g = s.get("trib_generation"); std::isfinite(g) && (out["generation"].is_null() || g > out["generation"].get<double>()))
      out["generation"] = g;
    if (e.role == "worker") out["workers"].push_back(worker_row(e, s));
    if (e.role == "ps") out["servers"].push_back(server_row(e, s));
  }
  sort_members(out["members"]);
  return out;
}

void sort_members(nlohmann::json& members) {
  if (!members.is_array()) return;
  auto key = [](const nlohmann::json& m) { return std::make_pair(m.value("role", ""), m.value("index", 0)); };
  std::stable_sort(members.begin(), members.end(),
                   [&](const nlohmann::json& a, const nlohmann::json& b) { return key(a) < key(b); });
}

namespace {

std::string cell(const nlohmann::json& v, const char* format = "{:.4g}") {
  if (v.is_null()) return "-";
  if (v.is_number()) return fmt::format(fmt::runtime(format), v.get<double>());
  return v.dump();
}

}  // namespace

std::string format_status_table(const nlohmann::json& st) {
  std::string out;
  out += fmt::format("generation {}   members:", cell(st.value("generation", nlohmann::json()), "{:.0f}"));
  for (const auto& m : st["members"])
    out += fmt::format(" {}{}{}", m["role"].get<std::string>() == "coordinator" ? "coord" : m["role"].get<std::string>(),
                       m["role"].get<std::string>() == "coordinator" ? "" : std::to_string(m["index"].get<int>()),
                       m["up"].get<bool>() ? "" : "(down)");
  out += "\n";
  out += fmt::format("{:<8}{:>9}{:>10}{:>11}{:>12}{:>10}{:>10}{:>10}{:>10}\n", "worker", "step", "loss", "lr",
                     "images/s", "wait ms", "comp ms", "exch ms", "test acc");
  for (const auto& w : st["workers"]) {
    auto ms = [&](const char* k) { return w[k].is_null() ? std::string("-") : fmt::format("{:.1f}", w[k].get<double>() * 1e3); };
    out += fmt::format("{:<8}{:>9}{:>10}{:>11}{:>12}{:>10}{:>10}{:>10}{:>10}\n", w["index"].get<int>(),
                       cell(w["step"], "{:.0f}"), cell(w["loss"]), cell(w["lr"]), cell(w["images_per_s"], "{:.0f}"),
                       ms("wait_s"), ms("compute_s"), ms("exchange_s"), cell(w["eval_accuracy"]));
  }
  if (!st["servers"].empty()) {
    out += fmt::format("{:<8}{:>12}{:>12}{:>11}{:>11}{:>11}\n", "server", "MB in", "MB out", "requests", "updates",
                       "late");
    for (const auto& s : st["servers"]) {
      auto mb = [&](const char* k) { return s[k].is_null() ? std::string("-") : fmt::format("{:.1f}", s[k].get<double>() / 1e6); };
      out += fmt::format("{:<8}{:>12}{:>12}{:>11}{:>11}{:>11}\n", s["index"].get<int>(), mb("bytes_in"), mb("bytes_out"),
                         cell(s["requests"], "{:.0f}"), cell(s["updates"], "{:.0f}"), cell(s["late_drops"], "{:.0f}"));
    }
  }
  return out;
}

}  // namespace trib::monitor
