// CSV lines through a real Kafka topic decode to the same examples as the same events in JSON.
#include <map>

#include "integration/stream/stream_test_util.h"

namespace trib::stream {
namespace {

using namespace testing;

class CsvRecordsTest : public StreamTest {};

// Features and label of every event read from `topic`, by id.
std::map<std::int64_t, std::vector<float>> read_all(const std::string& bootstrap, const std::string& topic,
                                                    RecordFormat format, std::int64_t count) {
  KafkaSourceOptions o = source_options(bootstrap, topic);
  o.schema = EventGenerator::schema(format);
  KafkaSource source(o);
  std::map<std::int64_t, std::vector<float>> out;
  for (auto deadline = std::chrono::steady_clock::now() + 15s;
       static_cast<std::int64_t>(out.size()) < count && std::chrono::steady_clock::now() < deadline;) {
    auto batch = source.next(64);
    if (!batch) continue;
    const std::vector<std::int64_t> ids = ids_of(*batch);
    const std::int64_t width = batch->features().shape()[1];
    for (std::size_t r = 0; r < ids.size(); ++r) {
      std::vector<float>& row = out[ids[r]];
      const float* f = batch->features().data<float>() + static_cast<std::int64_t>(r) * width;
      row.assign(f, f + width);
      row.push_back(static_cast<float>(batch->labels().data<std::int32_t>()[r]));
    }
  }
  return out;
}

TEST_F(CsvRecordsTest, CsvLinesDecodeToTheSameExamplesAsJson) {
  constexpr std::int64_t kEvents = 300;
  const std::string csv = make_topic(2);
  const std::string json = csv + "_json";
  broker().create_topic({json, 2});
  produce_events(bootstrap(), csv, 0, kEvents, RecordFormat::csv);
  produce_events(bootstrap(), json, 0, kEvents, RecordFormat::json);
  const auto from_csv = read_all(bootstrap(), csv, RecordFormat::csv, kEvents);
  const auto from_json = read_all(bootstrap(), json, RecordFormat::json, kEvents);
  ASSERT_EQ(static_cast<std::int64_t>(from_csv.size()), kEvents);
  ASSERT_EQ(static_cast<std::int64_t>(from_json.size()), kEvents);
  for (const auto& [id, row] : from_csv) EXPECT_EQ(row, from_json.at(id)) << "event " << id;
}

}  // namespace
}  // namespace trib::stream
