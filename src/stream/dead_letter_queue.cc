#include "stream/dead_letter_queue.h"

#include <vector>

namespace trib::stream::detail {

DeadLetterQueue::DeadLetterQueue(const KafkaConfig& config, std::string source_topic, std::string topic)
    : source_topic_(std::move(source_topic)), topic_(std::move(topic)), producer_(config, "dead-letter producer") {}

void DeadLetterQueue::send(std::int32_t partition, std::int64_t offset, std::int64_t timestamp_ms,
                           std::string_view key, std::string_view value, const DecodeError& error) {
  const std::vector<Header> headers = {
      {"trib.error", error.message},
      {"trib.error.kind", std::string(kind_name(error.kind))},
      {"trib.error.field", error.field},
      {"trib.source.topic", source_topic_},
      {"trib.source.partition", std::to_string(partition)},
      {"trib.source.offset", std::to_string(offset)},
      {"trib.source.timestamp", std::to_string(timestamp_ms)},
  };
  // The original timestamp is kept, so the dead letter sorts with the event it was.
  producer_.produce(topic_, key, value, timestamp_ms, headers);
}

}  // namespace trib::stream::detail
