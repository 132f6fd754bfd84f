#include "trib/config/stream_config.h"

#include <algorithm>

#include "config/config_reader.h"

namespace trib::config {

void read_stream_data(ConfigReader& data, KafkaDataConfig& k, SchemaDataConfig& s, GeneratorConfig& g) {
  const std::string& file = data.file();
  ConfigReader kr = data.child("kafka");
  k.bootstrap_servers = kr.get<std::string>("bootstrap_servers", k.bootstrap_servers);
  k.topic = kr.get<std::string>("topic", k.topic);
  k.group_id = kr.get<std::string>("group_id", k.group_id);
  k.properties = kr.get_text_map("properties");
  k.shuffle_buffer = kr.get<std::int64_t>("shuffle_buffer", k.shuffle_buffer);
  k.connect_timeout_s = kr.get<int>("connect_timeout_s", k.connect_timeout_s);
  k.idle_timeout_s = kr.get<double>("idle_timeout_s", k.idle_timeout_s);
  k.record_ids = kr.get<bool>("record_ids", k.record_ids);
  k.assignment = kr.get<std::string>("assignment", k.assignment);
  k.share_cursors = kr.get<bool>("share_cursors", k.share_cursors);
  kr.finish();
  TRIB_CHECK(k.assignment == "auto" || k.assignment == "group" || k.assignment == "job", InvalidArgument,
             "config {}: {} '{}' is not supported: expected auto, group or job", file, kr.where("assignment"),
             k.assignment);
  TRIB_CHECK(!k.topic.empty(), InvalidArgument, "config {}: {} must name a topic", file, kr.where("topic"));
  TRIB_CHECK(k.shuffle_buffer >= 0 && k.connect_timeout_s > 0 && k.idle_timeout_s >= 0, InvalidArgument,
             "config {}: {} must be >= 0, {} positive and {} >= 0", file, kr.where("shuffle_buffer"),
             kr.where("connect_timeout_s"), kr.where("idle_timeout_s"));

  ConfigReader sr = data.child("schema");
  s.format = sr.get<std::string>("format", s.format);
  s.features = sr.get_list<std::string>("features", {});
  s.label = sr.get<std::string>("label", s.label);
  s.id_field = sr.get<std::string>("id_field", s.id_field);
  s.csv_columns = sr.get_list<std::string>("csv_columns", {});
  s.log1p = sr.get_list<std::string>("log1p", {});
  sr.finish();
  TRIB_CHECK(s.format == "json" || s.format == "csv", InvalidArgument,
             "config {}: {} '{}' is not supported: expected json or csv", file, sr.where("format"), s.format);
  TRIB_CHECK(!s.features.empty(), InvalidArgument, "config {}: {} must list at least one field", file,
             sr.where("features"));
  for (const std::string& f : s.log1p)
    TRIB_CHECK(std::find(s.features.begin(), s.features.end(), f) != s.features.end(), InvalidArgument,
               "config {}: {} names '{}', which is not one of {}", file, sr.where("log1p"), f, sr.where("features"));
  TRIB_CHECK(!k.record_ids || !s.id_field.empty(), InvalidArgument, "config {}: {} needs {}", file,
             kr.where("record_ids"), sr.where("id_field"));

  ConfigReader gr = data.child("generator");
  g.rate = gr.get<double>("rate", g.rate);
  g.duration_s = gr.get<double>("duration_s", g.duration_s);
  g.count = gr.get<std::int64_t>("count", g.count);
  g.drift_after_s = gr.get<double>("drift_after_s", g.drift_after_s);
  g.partitions = gr.get<int>("partitions", g.partitions);
  g.seed = gr.get<std::uint64_t>("seed", g.seed);
  gr.finish();
  TRIB_CHECK(g.rate >= 0 && g.partitions >= 1, InvalidArgument, "config {}: {} must be >= 0 and {} >= 1", file,
             gr.where("rate"), gr.where("partitions"));
}

}  // namespace trib::config
