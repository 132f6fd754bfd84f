// Scalars as TensorBoard reads them: a tfevents file of TFRecords (a little-endian u64 length,
// the masked CRC32C of those 8 bytes, the data, the masked CRC32C of the data), each an Event
// proto (event.proto, TensorFlow's field numbers). The first record names the file version.
//
//   TfEventsWriter w(run_dir);          // run_dir/events.out.tfevents.<time>.<host>.<pid>
//   w.scalar("loss/worker0", 100, 0.42);
//   w.flush();                         // TensorBoard reads the file while it grows
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace trib::tensorboard {

class TfEventsWriter {
 public:
  // Creates the file in `dir` (which must exist). IoError when it cannot be written.
  explicit TfEventsWriter(const std::filesystem::path& dir);
  void scalar(const std::string& tag, std::int64_t step, double value);
  void flush();
  const std::filesystem::path& path() const { return path_; }

 private:
  void write_event(const std::string& serialized);
  std::filesystem::path path_;
  std::ofstream out_;
};

// TFRecord's checksum: CRC32C, rotated right by 15 bits, plus 0xa282ead8.
std::uint32_t masked_crc32c(const void* data, std::size_t bytes);
// One TFRecord holding `data`.
std::string tfrecord(std::string_view data);

}  // namespace trib::tensorboard
