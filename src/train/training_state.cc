#include "train/training_state.h"

namespace trib::train {

namespace fs = std::filesystem;

namespace {

constexpr char kHex[] = "0123456789abcdef";

std::string to_hex(const std::string& bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) out += {kHex[c >> 4], kHex[c & 15]};
  return out;
}

std::string from_hex(const std::string& hex) {
  TRIB_CHECK(hex.size() % 2 == 0, Corruption, "data position: odd-length hex string");
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    throw Corruption(fmt::format("data position: '{}' is not a hex digit", c));
  };
  std::string out(hex.size() / 2, '\0');
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<char>(nibble(hex[2 * i]) << 4 | nibble(hex[2 * i + 1]));
  return out;
}

void report_skipped(const ValidCheckpoint& v, std::FILE* log) {
  for (const std::string& why : v.skipped)
    fmt::print(log, "warning: skipping a damaged checkpoint: {}\n", why);
}

}  // namespace

nlohmann::json data_position_to_json(const data::DataPosition& position) {
  // Readable fields for people, the exact encoding for the program.
  return {{"summary", position.to_string()}, {"encoded_hex", to_hex(position.serialize())}};
}

data::DataPosition data_position_from_json(const nlohmann::json& j) {
  TRIB_CHECK(j.is_object() && j.contains("encoded_hex") && j["encoded_hex"].is_string(), Corruption,
             "checkpoint manifest: data_position lacks 'encoded_hex'");
  return data::DataPosition::parse(from_hex(j["encoded_hex"].get<std::string>()));
}

ValidCheckpoint find_resume_checkpoint(const fs::path& run_dir, std::FILE* log) {
  fs::path root = run_dir / "checkpoints";
  std::optional<ValidCheckpoint> found = load_latest_valid(root);
  TRIB_CHECK(found.has_value(), NotFound,
             "--resume {}: no checkpoint found (expected {}/ckpt-<step>/manifest.json)", run_dir.string(),
             root.string());
  report_skipped(*found, log);
  return std::move(*found);
}

void restore_variables(const Checkpoint& ckpt, const std::vector<nn::Parameter>& params, VariableStore& vars) {
  for (const nn::Parameter& p : params) {
    const Tensor t = ckpt.variable(p.name);  // whole, or joined from a parameter server's row slices
    TRIB_CHECK(t.dtype() == DType::f32 && t.shape() == p.shape, ShapeError,
               "checkpoint {}: tensor '{}' is {} but the model needs f32{}", ckpt.dir().string(), p.name,
               t.spec_string(), p.shape.to_string());
    vars.set(p.name, t);
  }
}

Checkpoint load_checkpoint_for_eval(const fs::path& path, std::FILE* log) {
  if (fs::exists(path / "manifest.json")) return Checkpoint::load(path);
  for (const fs::path& root : {path / "checkpoints", path}) {
    if (!fs::is_directory(root)) continue;
    if (auto v = load_latest_valid(root)) {
      report_skipped(*v, log);
      return std::move(v->checkpoint);
    }
  }
  throw NotFound(fmt::format("--checkpoint {}: no checkpoint there (expected a ckpt-<step> directory with "
                             "manifest.json, or a run directory holding checkpoints/)",
                             path.string()));
}

}  // namespace trib::train
