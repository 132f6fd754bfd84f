// Where a data stream stands, so that a checkpoint can save it and a restarted job can resume
// with exactly the batches an uninterrupted run would have produced. It is a flat set of named
// fields, each stage of a pipeline adding its own ("epoch", "cursor", "shuffle_buffer.rng_counter"),
// which keeps it readable in logs and lets a new kind of source (a Kafka offset per partition)
// add fields without a format change.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>

namespace trib::data {

class DataPosition {
 public:
  // Values are arbitrary bytes; integers are stored as decimal text.
  void set(std::string_view key, std::string value);
  void set_int(std::string_view key, std::int64_t value);
  void set_uint(std::string_view key, std::uint64_t value);

  bool has(std::string_view key) const { return fields_.find(key) != fields_.end(); }
  // Throw NotFound naming the key when absent, Corruption when not an integer.
  const std::string& get(std::string_view key) const;
  std::int64_t get_int(std::string_view key) const;
  std::uint64_t get_uint(std::string_view key) const;

  const std::map<std::string, std::string, std::less<>>& fields() const { return fields_; }

  // A binary-safe, versioned encoding for checkpoints; parse() validates every length before
  // it allocates and throws Corruption naming what is wrong.
  std::string serialize() const;
  static DataPosition parse(std::string_view bytes);

  // "cursor=512 epoch=3 seed=7" for logs; long or binary values are shown by size only.
  std::string to_string() const;

  bool operator==(const DataPosition&) const = default;

 private:
  std::map<std::string, std::string, std::less<>> fields_;
};

}  // namespace trib::data
