#include "trib/checkpoint/manifest.h"

#include <algorithm>

#include <fmt/format.h>

#include "checkpoint/layout.h"
#include "trib/checkpoint/safetensors.h"
#include "trib/core/error.h"

namespace trib {
namespace {

using nlohmann::json;

std::string hex32(std::uint32_t v) { return fmt::format("{:08x}", v); }

// Field access that turns any missing or mistyped field into a one-line Corruption.
class Fields {
 public:
  Fields(const json& j, std::string_view source, std::string context)
      : j_(j), source_(source), context_(std::move(context)) {
    TRIB_CHECK(j.is_object(), Corruption, "checkpoint {}: {} is not a JSON object", source_, where());
  }
  const json& get(const char* key) const {
    auto it = j_.find(key);
    TRIB_CHECK(it != j_.end(), Corruption, "checkpoint {}: {} has no field '{}'", source_, where(), key);
    return *it;
  }
  std::int64_t integer(const char* key) const {
    const json& v = get(key);
    TRIB_CHECK(v.is_number_integer(), Corruption, "checkpoint {}: field '{}' of {} is not an integer", source_, key,
               where());
    return v.get<std::int64_t>();
  }
  std::uint64_t unsigned_integer(const char* key) const {
    const json& v = get(key);
    TRIB_CHECK(v.is_number_unsigned(), Corruption, "checkpoint {}: field '{}' of {} is not a non-negative integer",
               source_, key, where());
    return v.get<std::uint64_t>();
  }
  const std::string& string(const char* key) const {
    const json& v = get(key);
    TRIB_CHECK(v.is_string(), Corruption, "checkpoint {}: field '{}' of {} is not a string", source_, key, where());
    return v.get_ref<const std::string&>();
  }
  const json& object(const char* key) const {
    const json& v = get(key);
    TRIB_CHECK(v.is_object(), Corruption, "checkpoint {}: field '{}' of {} is not an object", source_, key, where());
    return v;
  }
  const json& array(const char* key) const {
    const json& v = get(key);
    TRIB_CHECK(v.is_array(), Corruption, "checkpoint {}: field '{}' of {} is not an array", source_, key, where());
    return v;
  }
  // Throws Corruption with the manifest's name and this object's context in front.
  [[noreturn]] void fail(const std::string& problem) const {
    throw Corruption(fmt::format("checkpoint {}: {} {}", source_, where(), problem));
  }

 private:
  std::string where() const { return context_; }
  const json& j_;
  std::string_view source_;
  std::string context_;
};

ManifestTensor tensor_from_json(const json& j, std::string_view source, const std::string& name) {
  Fields f(j, source, fmt::format("tensor '{}'", name));
  ManifestTensor t;
  t.shard = f.string("shard");
  std::optional<DType> dtype = parse_safetensors_dtype(f.string("dtype"));
  if (!dtype) f.fail(fmt::format("has unsupported dtype '{}'", f.string("dtype")));
  t.dtype = *dtype;
  std::vector<std::int64_t> dims;
  for (const json& d : f.array("shape")) {
    if (!d.is_number_unsigned()) f.fail("has a shape entry that is not a non-negative integer");
    dims.push_back(d.get<std::int64_t>());
  }
  try {
    t.shape = Shape(std::move(dims));
  } catch (const InvalidArgument& e) {
    f.fail(fmt::format("has an invalid shape ({})", e.what()));
  }
  const std::string& crc = f.string("crc32c");
  std::size_t used = 0;
  unsigned long value = 0;
  try {
    value = std::stoul(crc, &used, 16);
  } catch (const std::exception&) {
    used = 0;
  }
  if (crc.size() != 8 || used != 8) f.fail(fmt::format("has crc32c '{}', expected 8 hex digits", crc));
  t.crc32c = static_cast<std::uint32_t>(value);
  return t;
}

}  // namespace

json Manifest::to_json() const {
  json j = json::object();
  j["format"] = kFormat;
  j["format_version"] = format_version;
  j["step"] = step;
  j["epoch"] = epoch;
  json rng = json::object();
  for (const auto& [name, s] : rng_states) {
    rng[name] = {{"seed", s.seed}, {"counter", s.counter}, {"buffered", s.buffered}};
  }
  j["rng_states"] = std::move(rng);
  j["data_position"] = data_position;
  json secs = json::object();
  for (const auto& [name, value] : sections) secs[name] = value;
  j["sections"] = std::move(secs);
  json shard_list = json::array();
  for (const ManifestShard& s : shards) shard_list.push_back({{"file", s.file}, {"bytes", s.bytes}});
  j["shards"] = std::move(shard_list);
  json ts = json::object();
  for (const auto& [name, t] : tensors) {
    ts[name] = {{"shard", t.shard},
                {"dtype", safetensors_dtype_name(t.dtype)},
                {"shape", t.shape.dims()},
                {"crc32c", hex32(t.crc32c)}};
  }
  j["tensors"] = std::move(ts);
  return j;
}

Manifest Manifest::from_json(const json& j, std::string_view source) {
  Fields f(j, source, "the manifest");
  if (f.string("format") != kFormat) f.fail(fmt::format("has format '{}', expected '{}'", f.string("format"), kFormat));
  Manifest m;
  const std::int64_t version = f.integer("format_version");
  if (version < 1 || version > kFormatVersion) {
    f.fail(fmt::format("has format_version {}; this build reads versions 1 to {}", version, kFormatVersion));
  }
  m.format_version = static_cast<int>(version);
  m.step = f.integer("step");
  m.epoch = f.integer("epoch");
  for (const auto& [name, value] : f.object("rng_states").items()) {
    Fields r(value, source, fmt::format("RNG state '{}'", name));
    const std::uint64_t buffered = r.unsigned_integer("buffered");
    if (buffered > 3) r.fail(fmt::format("has buffered = {}, expected 0 to 3", buffered));
    m.rng_states[name] = RngState{r.unsigned_integer("seed"), r.unsigned_integer("counter"),
                                  static_cast<std::uint32_t>(buffered)};
  }
  m.data_position = f.get("data_position");
  for (const auto& [name, value] : f.object("sections").items()) m.sections[name] = value;
  for (const json& s : f.array("shards")) {
    Fields sf(s, source, "a shard entry");
    m.shards.push_back({sf.string("file"), sf.unsigned_integer("bytes")});
  }
  for (const auto& [name, value] : f.object("tensors").items()) {
    m.tensors[name] = tensor_from_json(value, source, name);
  }
  // The shard names come from a file; a name with a path in it could point outside the
  // checkpoint, so only plain names are accepted.
  for (const ManifestShard& s : m.shards) {
    if (!checkpoint_detail::is_plain_file_name(s.file)) f.fail(fmt::format("lists shard file '{}', which is not a plain file name", s.file));
  }
  for (const auto& [name, t] : m.tensors) {
    bool known = std::any_of(m.shards.begin(), m.shards.end(), [&](const ManifestShard& s) { return s.file == t.shard; });
    if (!known) f.fail(fmt::format("places tensor '{}' in shard '{}', which is not in the shard list", name, t.shard));
  }
  return m;
}

}  // namespace trib
