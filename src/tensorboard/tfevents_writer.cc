#include "trib/tensorboard/tfevents_writer.h"

#include <unistd.h>

#include <chrono>

#include <fmt/format.h>

#include "checkpoint/crc32c.h"
#include "tensorboard/event.pb.h"  // generated from event.proto
#include "trib/core/error.h"

namespace trib::tensorboard {

namespace {

double wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void put_u32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out += static_cast<char>((v >> (8 * i)) & 0xff);
}

}  // namespace

std::uint32_t masked_crc32c(const void* data, std::size_t bytes) {
  const std::uint32_t crc = crc32c(data, bytes);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string tfrecord(std::string_view data) {
  std::string out;
  const std::uint64_t length = data.size();
  for (int i = 0; i < 8; ++i) out += static_cast<char>((length >> (8 * i)) & 0xff);
  put_u32(out, masked_crc32c(out.data(), 8));
  out += data;
  put_u32(out, masked_crc32c(data.data(), data.size()));
  return out;
}

TfEventsWriter::TfEventsWriter(const std::filesystem::path& dir) {
  char host[256] = "localhost";
  ::gethostname(host, sizeof host - 1);
  path_ = dir / fmt::format("events.out.tfevents.{}.{}.{}", static_cast<std::int64_t>(wall_time()), host, ::getpid());
  out_.open(path_, std::ios::binary | std::ios::app);
  TRIB_CHECK(out_.good(), IoError, "cannot write the TensorBoard file {}", path_.string());
  tensorflow::Event version;
  version.set_wall_time(wall_time());
  version.set_file_version("brain.Event:2");
  write_event(version.SerializeAsString());
  flush();
}

void TfEventsWriter::scalar(const std::string& tag, std::int64_t step, double value) {
  tensorflow::Event e;
  e.set_wall_time(wall_time());
  e.set_step(step);
  tensorflow::Summary::Value* v = e.mutable_summary()->add_value();
  v->set_tag(tag);
  v->set_simple_value(static_cast<float>(value));
  write_event(e.SerializeAsString());
}

void TfEventsWriter::write_event(const std::string& serialized) { out_ << tfrecord(serialized); }

void TfEventsWriter::flush() {
  out_.flush();
  TRIB_CHECK(out_.good(), IoError, "cannot write the TensorBoard file {}", path_.string());
}

}  // namespace trib::tensorboard
