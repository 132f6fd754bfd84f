#include "train_stream/kafka_batch_source.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

#include "train/training_state.h"
#include "trib/core/error.h"

namespace trib::train_stream {
namespace {

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

stream::KafkaSourceOptions source_options(const config::JobConfig& job, const std::string& run_id) {
  const config::KafkaDataConfig& k = job.data.kafka;
  const config::SchemaDataConfig& s = job.data.schema;
  stream::KafkaSourceOptions o;
  o.kafka.bootstrap_servers = k.bootstrap_servers;
  o.kafka.properties = k.properties;
  o.kafka.connect_timeout = std::chrono::seconds(k.connect_timeout_s);
  o.topic = k.topic;
  o.group_id = k.group_id.empty() ? "trib-" + job.name : k.group_id;
  o.schema.format = stream::parse_record_format(s.format);
  o.schema.features = s.features;
  o.schema.label = s.label;
  o.schema.id_field = s.id_field;
  o.schema.csv_columns = s.csv_columns;
  o.schema.num_classes = static_cast<int>(job.model.classes);
  o.run_id = run_id;
  if (k.idle_timeout_s > 0) o.idle_end = std::chrono::milliseconds(static_cast<std::int64_t>(k.idle_timeout_s * 1000));
  return o;
}

// sign(x) * log(1 + |x|) on the schema's log1p columns: amounts and distances span decades.
data::BatchTransform log1p_columns(const config::SchemaDataConfig& s) {
  std::vector<std::size_t> cols;
  for (const std::string& name : s.log1p)
    cols.push_back(static_cast<std::size_t>(std::find(s.features.begin(), s.features.end(), name) - s.features.begin()));
  const std::size_t width = s.features.size();
  return [cols, width](data::Batch b) {
    Tensor f = b.features().clone();
    float* x = f.data<float>();
    for (std::int64_t r = 0; r < f.shape()[0]; ++r)
      for (std::size_t c : cols) {
        float& v = x[static_cast<std::size_t>(r) * width + c];
        v = std::copysign(std::log1p(std::fabs(v)), v);
      }
    b.set(data::Batch::kFeatures, std::move(f));
    return b;
  };
}

}  // namespace

KafkaBatchSource::KafkaBatchSource(const config::JobConfig& job, const train::Distribution& dist)
    : job_(job), dist_(dist), sync_(dist) {}

void KafkaBatchSource::start(const train::SourceStart& start) {
  const config::KafkaDataConfig& kc = job_.data.kafka;
  const config::TrainingConfig& tc = job_.training;
  // Where to start: the checkpoint's offsets (the chief's, handed to every worker), never
  // the group's commits. One worker restores its whole pipeline position (exact with a
  // shuffle buffer); several restore the merged Kafka offsets (see docs/streaming.md).
  std::optional<data::DataPosition> full_position;
  if (dist_.chief()) {
    start_.run_id = fmt::format("{}-{}", wall_ms(), std::random_device{}());
    if (start.checkpoint != nullptr) {
      const Manifest& m = start.checkpoint->manifest();
      if (m.sections.count("kafka")) start_.offsets = train::data_position_from_json(m.sections.at("kafka"));
      if (dist_.workers == 1 && !m.data_position.is_null())
        full_position = train::data_position_from_json(m.data_position);
    }
  }
  start_ = sync_.start(start_);

  auto source = std::make_unique<stream::KafkaSource>(source_options(job_, start_.run_id));
  stream::KafkaSource* kafka = kafka_ = source.get();
  if (!full_position && !start_.offsets.fields().empty()) kafka->seek(start_.offsets);
  sync_.await_assignment([kafka] { return !kafka->assignment().empty(); },
                         [kafka] { kafka->service(std::chrono::milliseconds(10)); }, std::chrono::seconds(60),
                         kc.topic);
  data::PipelineBuilder builder = data::Pipeline::from(std::move(source));
  if (job_.data.shuffle && kc.shuffle_buffer > 0)
    builder.shuffle_buffer(kc.shuffle_buffer, tc.seed + static_cast<std::uint64_t>(dist_.worker_index));
  if (!job_.data.schema.log1p.empty()) builder.map(log1p_columns(job_.data.schema));
  pipeline_.emplace(builder.batch(tc.batch, /*drop_last=*/true).prefetch(job_.data.prefetch).build());
  if (full_position) pipeline_->seek(*full_position);
}

std::optional<data::DataPosition> KafkaBatchSource::position() const {
  if (dist_.workers > 1) return std::nullopt;
  return pipeline_->position();
}

data::DataPosition KafkaBatchSource::kafka_position() const { return kafka_fields(pipeline_->position()); }

}  // namespace trib::train_stream
