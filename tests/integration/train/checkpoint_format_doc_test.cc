// Reads a checkpoint that `train` wrote using only what docs/checkpoint_format.md says: the
// manifest's fields, the safetensors layout, the shard names, the tensor names, the CRC32C,
// the position encoding and the layouts (dense w [in, out], conv w OIHW, NCHW flatten). The
// reader here shares no code with src/checkpoint; the model's test loss, computed by hand
// from the tensors it reads, must equal the one `trib eval` computes from the checkpoint.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "trib/config/job_config.h"
#include "trib/data/idx.h"
#include "trib/train/trainer.h"

namespace trib {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const std::string kData = "/usr/share/datasets/fashion-mnist/";

// A small CNN: conv2d (OIHW, same padding), flatten (NCHW), dense ([in, out]); Adam, so
// that the checkpoint holds slots too.
const char* kJob = R"(name: checkpoint_doc
model:
  input: [1, 28, 28]
  classes: 10
  layers:
    - {type: conv2d, filters: 3, kernel: 3, activation: relu}
    - {type: flatten}
    - {type: dense, units: 10}
data:
  format: idx
  train:
    images: /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
    labels: /usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz
  test:
    images: /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz
    labels: /usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz
  train_subset: 640
  test_subset: 200
optimizer: {name: adam, lr: 0.005}
training: {steps: 20, batch: 32, eval_batch: 100, train_metrics: false}
threads: {intra: 1, inter: 1}
)";

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

// CRC32C (Castagnoli, reflected polynomial 0x82f63b78), bit by bit: the doc's definition.
std::uint32_t crc32c(std::string_view bytes) {
  std::uint32_t crc = 0xffffffffu;
  for (unsigned char c : bytes) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
  }
  return ~crc;
}

struct DocTensor {
  std::string dtype;
  std::vector<std::int64_t> shape;
  std::string bytes;
  std::vector<float> f32() const {
    std::vector<float> v(bytes.size() / 4);
    std::memcpy(v.data(), bytes.data(), bytes.size());
    return v;
  }
};

// One shard, by the doc: u64 header length, JSON header, data section.
std::map<std::string, DocTensor> read_shard(const fs::path& file, json& metadata) {
  const std::string all = read_file(file);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(all[i]);
  EXPECT_EQ((8 + n) % 8, 0u) << "header padded to a multiple of 8";
  json header = json::parse(all.substr(8, n));
  const std::string data = all.substr(8 + n);
  std::map<std::string, DocTensor> out;
  std::uint64_t covered = 0;
  for (auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      metadata = entry;
      continue;
    }
    auto offsets = entry.at("data_offsets").get<std::vector<std::uint64_t>>();
    DocTensor t{entry.at("dtype"), entry.at("shape").get<std::vector<std::int64_t>>(),
                data.substr(offsets[0], offsets[1] - offsets[0])};
    covered += offsets[1] - offsets[0];
    out[name] = std::move(t);
  }
  EXPECT_EQ(covered, data.size()) << "tensors cover the data section exactly";
  return out;
}

// A position's fields, by the doc: hex of "trib-data-position 1\n" then "<key> <len>\n<value>\n".
std::map<std::string, std::string> decode_position(const json& position) {
  const std::string hex = position.at("encoded_hex");
  std::string bytes;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  const std::string magic = "trib-data-position 1\n";
  EXPECT_TRUE(bytes.starts_with(magic)) << bytes;
  std::map<std::string, std::string> fields;
  for (std::size_t at = magic.size(); at < bytes.size();) {
    std::size_t eol = bytes.find('\n', at);
    std::string line = bytes.substr(at, eol - at);
    std::size_t space = line.rfind(' ');
    std::size_t len = std::stoul(line.substr(space + 1));
    fields[line.substr(0, space)] = bytes.substr(eol + 1, len);
    at = eol + 1 + len + 1;
  }
  return fields;
}

// The test loss of the CNN, computed by hand from the layouts the doc gives.
double test_loss_by_hand(const std::map<std::string, DocTensor>& t, std::int64_t examples) {
  data::InMemoryDataset test = data::load_idx_pair(kData + "t10k-images-idx3-ubyte.gz",
                                                   kData + "t10k-labels-idx1-ubyte.gz", {.num_classes = 10});
  const std::vector<float> cw = t.at("conv2d_0/w").f32(), cb = t.at("conv2d_0/b").f32();
  const std::vector<float> dw = t.at("dense_2/w").f32(), db = t.at("dense_2/b").f32();
  const int O = 3, I = 1, K = 3, H = 28, W = 28, P = K / 2, units = 10;
  double total = 0;
  for (std::int64_t n = 0; n < examples; ++n) {
    const std::vector<float> x = test.get(n).features().to_vector<float>();  // [28, 28], in [0, 1]
    const std::int32_t label = test.get(n).labels().to_vector<std::int32_t>()[0];
    std::vector<float> flat(O * H * W);  // NCHW flatten: c*H*W + h*W + w
    for (int o = 0; o < O; ++o)
      for (int h = 0; h < H; ++h)
        for (int w = 0; w < W; ++w) {
          float acc = cb[o];
          for (int i = 0; i < I; ++i)
            for (int kh = 0; kh < K; ++kh)
              for (int kw = 0; kw < K; ++kw) {
                const int y = h + kh - P, xx = w + kw - P;
                if (y < 0 || y >= H || xx < 0 || xx >= W) continue;
                acc += cw[((o * I + i) * K + kh) * K + kw] * x[y * W + xx];  // OIHW
              }
          flat[(o * H + h) * W + w] = std::max(acc, 0.0f);  // relu
        }
    std::vector<double> logits(units);
    const int in = O * H * W;
    for (int j = 0; j < units; ++j) {
      double acc = db[j];
      for (int i = 0; i < in; ++i) acc += double(flat[i]) * dw[i * units + j];  // [in, out]
      logits[j] = acc;
    }
    double m = *std::max_element(logits.begin(), logits.end()), sum = 0;
    for (double l : logits) sum += std::exp(l - m);
    total += m + std::log(sum) - logits[label];
  }
  return total / examples;
}

TEST(CheckpointFormatDoc, ACheckpointReadByTheDocAloneIsTheModel) {
  const fs::path base = fs::temp_directory_path() / ("trib_ckpt_doc_" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base);
  std::ofstream(base / "job.yaml") << kJob;
  std::FILE* quiet = std::fopen("/dev/null", "w");
  config::JobConfig job = config::load_job_config((base / "job.yaml").string(), {});
  train::TrainerOptions o{job, base / "run", false, false, quiet, {}, {}};
  train::train(o);

  // The newest checkpoint: ckpt-<step>, complete when it has a manifest.
  const fs::path ckpt = base / "run" / "checkpoints" / "ckpt-20";
  ASSERT_TRUE(fs::exists(ckpt / "manifest.json")) << "ckpt-<step> for the last step, 20";
  const json m = json::parse(read_file(ckpt / "manifest.json"));
  EXPECT_EQ(m.at("format"), "tributary-checkpoint");
  EXPECT_EQ(m.at("format_version"), 1);
  EXPECT_EQ(m.at("step"), 20);
  EXPECT_TRUE(m.at("rng_states").is_object());
  EXPECT_TRUE(m.at("sections").is_object());

  // Shards: model and optimizer, with their exact sizes and metadata.
  std::vector<std::string> files;
  for (const json& s : m.at("shards")) {
    files.push_back(s.at("file"));
    EXPECT_EQ(fs::file_size(ckpt / s.at("file").get<std::string>()), s.at("bytes").get<std::uint64_t>());
  }
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files, (std::vector<std::string>{"model.safetensors", "optimizer.safetensors"}));
  std::map<std::string, DocTensor> tensors;
  for (const std::string& f : files) {
    json metadata;
    for (auto& [name, t] : read_shard(ckpt / f, metadata)) {
      const json& entry = m.at("tensors").at(name);
      EXPECT_EQ(entry.at("shard"), f) << name;
      EXPECT_EQ(entry.at("dtype"), t.dtype) << name;
      EXPECT_EQ(entry.at("shape").get<std::vector<std::int64_t>>(), t.shape) << name;
      EXPECT_EQ(entry.at("crc32c"), fmt::format("{:08x}", crc32c(t.bytes))) << name;
      tensors[name] = t;
    }
    EXPECT_EQ(metadata, (json{{"writer", "tributary"}, {"shard", f.substr(0, f.find('.'))}}));
  }
  EXPECT_EQ(tensors.size(), m.at("tensors").size()) << "the manifest lists exactly the shards' tensors";

  // Names and shapes: <type>_<position in model.layers>/<parameter>; dense [in, units],
  // conv2d [filters, in_channels, kernel, kernel]; Adam's slots m, v and an I64 scalar step.
  EXPECT_EQ(tensors.at("conv2d_0/w").shape, (std::vector<std::int64_t>{3, 1, 3, 3}));
  EXPECT_EQ(tensors.at("conv2d_0/b").shape, (std::vector<std::int64_t>{3}));
  EXPECT_EQ(tensors.at("dense_2/w").shape, (std::vector<std::int64_t>{3 * 28 * 28, 10}));
  EXPECT_EQ(tensors.at("dense_2/b").shape, (std::vector<std::int64_t>{10}));
  for (const char* var : {"conv2d_0/w", "conv2d_0/b", "dense_2/w", "dense_2/b"}) {
    EXPECT_EQ(tensors.at(std::string("slot/") + var + "/m").shape, tensors.at(var).shape) << var;
    EXPECT_EQ(tensors.at(std::string("slot/") + var + "/v").dtype, "F32") << var;
    const DocTensor& step = tensors.at(std::string("slot/") + var + "/step");
    EXPECT_EQ(step.dtype, "I64");
    EXPECT_TRUE(step.shape.empty());
    std::int64_t steps = 0;
    std::memcpy(&steps, step.bytes.data(), 8);
    EXPECT_EQ(steps, 20) << var;
  }

  // The data position: 20 steps of 32 from 640 examples is one epoch done.
  std::map<std::string, std::string> position = decode_position(m.at("data_position"));
  EXPECT_TRUE(position.contains("epoch")) << m.at("data_position").dump();
  EXPECT_TRUE(position.contains("cursor")) << m.at("data_position").dump();

  // The values are the model: the test loss from the layouts by hand is trib's own.
  train::EvalOptions e;
  e.job = job;
  e.checkpoint = ckpt;
  e.log = quiet;
  const double theirs = train::evaluate_checkpoint(e).loss;
  const double ours = test_loss_by_hand(tensors, 200);
  EXPECT_NEAR(ours, theirs, 1e-4 * std::max(1.0, std::abs(theirs)));
  std::fclose(quiet);
  fs::remove_all(base);
}

}  // namespace
}  // namespace trib
