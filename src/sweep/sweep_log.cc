#include "sweep_log.h"

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "trib/core/error.h"

namespace trib::sweep {

namespace {

nlohmann::json to_json(const ParamValue& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return *i;
  if (const auto* d = std::get_if<double>(&v)) return *d;
  return std::get<std::string>(v);
}

ParamValue from_json(const nlohmann::json& j) {
  if (j.is_number_integer()) return j.get<std::int64_t>();
  if (j.is_number()) return j.get<double>();
  return j.get<std::string>();
}

nlohmann::json base(const char* event, const TrialRecord& t) {
  nlohmann::json j = {{"event", event}, {"trial", t.id}};
  return j;
}

void add_result(nlohmann::json& j, const TrialRecord& t) {
  j["step"] = t.step;
  if (t.metric) j["metric"] = *t.metric;
}

}  // namespace

SweepLog::SweepLog(const std::filesystem::path& path) : path_(path), out_(path, std::ios::app) {
  TRIB_CHECK(out_.good(), IoError, "cannot write '{}'", path.string());
}

void SweepLog::write(const std::string& line) {
  out_ << line << '\n';
  out_.flush();
  TRIB_CHECK(out_.good(), IoError, "cannot write '{}'", path_.string());
}

void SweepLog::trial(const TrialRecord& t) {
  nlohmann::json j = base("trial", t);
  nlohmann::json params = nlohmann::json::object();
  for (const auto& [k, v] : t.params) params[k] = to_json(v);
  j["params"] = params;
  // The parameters in order too: a JSON object's keys come back sorted.
  nlohmann::json order = nlohmann::json::array();
  for (const auto& [k, v] : t.params) order.push_back(k);
  j["order"] = order;
  write(j.dump());
}

void SweepLog::result(const TrialRecord& t, const std::string& decision) {
  nlohmann::json j = base("result", t);
  add_result(j, t);
  j["decision"] = decision;
  write(j.dump());
}

void SweepLog::end(const TrialRecord& t) {
  nlohmann::json j = base("end", t);
  add_result(j, t);
  j["state"] = state_name(t.state);
  if (!t.note.empty()) j["note"] = t.note;
  if (t.cpu_s > 0) j["cpu_s"] = std::round(t.cpu_s * 1000) / 1000;
  write(j.dump());
}

std::vector<TrialRecord> SweepLog::replay(const std::filesystem::path& path, Asha* asha) {
  std::ifstream in(path);
  TRIB_CHECK(in.good(), NotFound, "'{}' not found: is this a sweep's directory?", path.string());
  std::vector<TrialRecord> trials;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.empty()) continue;
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception&) {
      if (in.peek() == EOF) break;  // the line a crash cut short
      throw Corruption(fmt::format("{}:{}: not JSON", path.string(), number));
    }
    const std::string event = j.value("event", "");
    const int id = j.value("trial", -1);
    TRIB_CHECK(id >= 0, Corruption, "{}:{}: no trial id", path.string(), number);
    if (event == "trial") {
      TRIB_CHECK(id == static_cast<int>(trials.size()), Corruption, "{}:{}: trial {} out of order", path.string(),
                 number, id);
      TrialRecord t;
      t.id = id;
      for (const auto& k : j.at("order")) t.params.emplace_back(k.get<std::string>(), from_json(j.at("params").at(k.get<std::string>())));
      trials.push_back(std::move(t));
      continue;
    }
    TRIB_CHECK(id < static_cast<int>(trials.size()), Corruption, "{}:{}: trial {} before its creation", path.string(),
               number, id);
    TrialRecord& t = trials[static_cast<std::size_t>(id)];
    t.step = j.value("step", std::int64_t{0});
    if (j.contains("metric")) t.metric = j["metric"].get<double>();
    if (event == "result") {
      const std::string decision = j.value("decision", "");
      // Only results at a rung are ASHA's records, as in the sweep that wrote them (a trial
      // stopped by the time budget between rungs was never compared).
      const std::vector<std::int64_t>* rungs = asha != nullptr ? &asha->rungs() : nullptr;
      const bool at_rung = rungs != nullptr && std::find(rungs->begin(), rungs->end(), t.step) != rungs->end();
      if (at_rung && t.metric && (decision == "continue" || decision == "stop" || decision == "wait"))
        asha->record(id, t.step, *t.metric);
      // The promotion rule's bookkeeping: who waits at a rung and who went on from it.
      if (at_rung && (decision == "continue" || decision == "promote")) asha->mark_promoted(id, t.step);
      if (decision == "wait") t.state = TrialState::waiting, t.note = "at rung " + std::to_string(t.step);
      if (decision == "promote") t.state = TrialState::pending, t.note.clear();
      // The decision ends the trial even when the crash came before its end line: a trial
      // stopped at a rung must not train past it on --resume.
      if (decision == "stop") t.state = TrialState::stopped, t.note = "stopped at step " + std::to_string(t.step);
      if (decision == "done") t.state = TrialState::completed;
    } else if (event == "end") {
      t.state = parse_state(j.at("state").get<std::string>());
      t.note = j.value("note", "");
      t.cpu_s = j.value("cpu_s", 0.0);
    }
  }
  return trials;
}

}  // namespace trib::sweep
