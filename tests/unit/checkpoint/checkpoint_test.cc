#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "temp_dir.h"
#include "trib/checkpoint/checkpoint.h"

namespace trib {
namespace {

using testing::read_bytes;
using testing::write_bytes;
namespace fs = std::filesystem;

class CheckpointTest : public testing::TempDirTest {
 protected:
  // A two-shard checkpoint with every dtype, a scalar, an empty tensor and optimizer slots.
  fs::path write(std::int64_t step, float w0 = 1.0f) {
    CheckpointWriter w(dir(), step);
    w.add_shard("shard-0", {{"dense1/w", Tensor::from_vector(Shape{2, 2}, std::vector<float>{w0, 2, 3, 4})},
                            {"dense1/b", Tensor::zeros(DType::f32, Shape{0})},
                            {"slot/dense1/w/m", Tensor::full(Shape{2, 2}, 0.5f)}});
    w.add_shard("shard-1", {{"emb/ids", Tensor::from_vector(Shape{3}, std::vector<std::int32_t>{4, 5, 6})},
                            {"slot/emb/step", Tensor::from_vector(Shape{}, std::vector<std::int64_t>{step})}});
    w.set_epoch(3);
    w.set_rng_state("trainer", RngState{42, 1000, 2});
    w.set_data_position({{"file", 7}, {"offset", 4096}});
    w.set_section("kafka_offsets", {{"train-0", 123}});
    return w.publish();
  }

  // Expects loading `ckpt` to fail with exception E whose one-line message contains every part.
  template <typename E>
  void expect_load_fails(const fs::path& ckpt, std::initializer_list<std::string> parts) {
    try {
      Checkpoint::load(ckpt);
      ADD_FAILURE() << "loaded a checkpoint that should fail";
    } catch (const E& e) {
      const std::string what = e.what();
      for (const std::string& part : parts) EXPECT_NE(what.find(part), std::string::npos) << what;
      EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    }
  }
};

// Changes one byte of a file.
void flip_byte(const fs::path& path, std::size_t offset_from_end) {
  std::string bytes = read_bytes(path);
  bytes[bytes.size() - 1 - offset_from_end] ^= 0x40;
  write_bytes(path, bytes);
}

TEST_F(CheckpointTest, RoundTripsTensorsAndManifestFields) {
  const fs::path ckpt = write(100);
  EXPECT_EQ(ckpt, dir() / "ckpt-100");
  Checkpoint c = Checkpoint::load(ckpt);
  EXPECT_EQ(c.step(), 100);
  EXPECT_EQ(c.tensor("dense1/w").to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(c.tensor("dense1/b").spec_string(), "f32[0]");
  EXPECT_EQ(c.tensor("emb/ids").to_vector<std::int32_t>(), (std::vector<std::int32_t>{4, 5, 6}));
  EXPECT_EQ(c.tensor("slot/emb/step").shape(), Shape{});
  EXPECT_EQ(c.tensor("slot/emb/step").item(), 100);
  EXPECT_EQ(c.tensors().size(), 5u);
  EXPECT_EQ(c.tensors_with_prefix("slot/").size(), 2u);
  EXPECT_THROW(c.tensor("dense2/w"), NotFound);

  const Manifest& m = c.manifest();
  EXPECT_EQ(m.format_version, 1);
  EXPECT_EQ(m.epoch, 3);
  EXPECT_EQ(m.rng_states.at("trainer"), (RngState{42, 1000, 2}));
  EXPECT_EQ(m.data_position["offset"], 4096);
  EXPECT_EQ(m.sections.at("kafka_offsets")["train-0"], 123);
  ASSERT_EQ(m.shards.size(), 2u);
  EXPECT_EQ(m.shards[0].file, "shard-0.safetensors");
  EXPECT_EQ(m.shards[0].bytes, fs::file_size(ckpt / "shard-0.safetensors"));
  EXPECT_EQ(m.tensors.at("emb/ids").shard, "shard-1.safetensors");
}

// A parameter server's split placement writes a variable as row slices, one per server
// ("w@0", "w@2"): a single process reads it whole; slices that leave a gap fail naming it.
TEST_F(CheckpointTest, AVariableInRowSlicesIsReadWhole) {
  CheckpointWriter w(dir(), 5);
  w.add_shard("ps-0", {{"dense/w@0", Tensor::from_vector(Shape{2, 2}, std::vector<float>{1, 2, 3, 4})},
                       {"gap/w@0", Tensor::from_vector(Shape{1, 2}, std::vector<float>{1, 2})}});
  w.add_shard("ps-1", {{"dense/w@2", Tensor::from_vector(Shape{1, 2}, std::vector<float>{5, 6})},
                       {"dense/b", Tensor::from_vector(Shape{2}, std::vector<float>{7, 8})},
                       {"gap/w@2", Tensor::from_vector(Shape{1, 2}, std::vector<float>{5, 6})}});
  Checkpoint c = Checkpoint::load(w.publish());
  const Tensor whole = c.variable("dense/w");
  EXPECT_EQ(whole.spec_string(), "f32[3, 2]");
  EXPECT_EQ(whole.to_vector<float>(), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(c.variable("dense/b").to_vector<float>(), (std::vector<float>{7, 8}));  // a whole one as it is
  EXPECT_THROW(c.variable("dense"), NotFound);  // "dense/w@0" is no slice of "dense"
  try {
    c.variable("gap/w");
    ADD_FAILURE() << "joined slices with a gap";
  } catch (const Corruption& e) {
    EXPECT_NE(std::string(e.what()).find("the slices of 'gap/w' do not tile it"), std::string::npos) << e.what();
  }
}

TEST_F(CheckpointTest, ManifestIsReadableJson) {
  const fs::path ckpt = write(5);
  const nlohmann::json j = nlohmann::json::parse(read_bytes(ckpt / "manifest.json"));
  EXPECT_EQ(j["format"], "tributary-checkpoint");
  EXPECT_EQ(j["step"], 5);
  EXPECT_EQ(j["tensors"]["dense1/w"]["dtype"], "F32");
  EXPECT_EQ(j["tensors"]["dense1/w"]["shape"], (nlohmann::json{2, 2}));
  EXPECT_EQ(j["tensors"]["dense1/w"]["crc32c"].get<std::string>().size(), 8u);
  EXPECT_FALSE(fs::exists(ckpt / "manifest.json.tmp"));
}

TEST_F(CheckpointTest, ListsTensorsFromTheManifest) {
  std::vector<TensorInfo> infos = list_tensors(write(1));
  ASSERT_EQ(infos.size(), 5u);
  EXPECT_EQ(infos[1].name, "dense1/w");
  EXPECT_EQ(infos[1].dtype, DType::f32);
  EXPECT_EQ(infos[1].shape, (Shape{2, 2}));
  EXPECT_EQ(infos[1].bytes, 16u);
  EXPECT_EQ(infos[1].shard, "shard-0.safetensors");
}

TEST_F(CheckpointTest, FlippedDataByteNamesTheFileAndTensor) {
  const fs::path ckpt = write(100);
  // Data is in name order (dense1/b: 0 bytes, dense1/w: 16, slot/dense1/w/m: 16), so byte 20
  // from the end lies inside dense1/w.
  flip_byte(ckpt / "shard-0.safetensors", 20);
  expect_load_fails<Corruption>(ckpt, {"checkpoint " + (ckpt / "shard-0.safetensors").string() +
                                           ": tensor 'dense1/w' fails its CRC32C check (stored 0x"});
}

TEST_F(CheckpointTest, TruncatedShardNamesTheFile) {
  const fs::path ckpt = write(100);
  const fs::path shard = ckpt / "shard-0.safetensors";
  fs::resize_file(shard, fs::file_size(shard) - 10);
  expect_load_fails<Corruption>(ckpt, {"checkpoint " + shard.string() + ": file is truncated (header says 32 bytes of data, file has 22)"});
}

TEST_F(CheckpointTest, AppendedBytesDisagreeWithTheManifest) {
  const fs::path ckpt = write(100);
  const fs::path shard = ckpt / "shard-1.safetensors";
  write_bytes(shard, read_bytes(shard) + "x");
  expect_load_fails<Corruption>(ckpt, {shard.string(), "the manifest says"});
}

TEST_F(CheckpointTest, CorruptShardHeaderJson) {
  const fs::path ckpt = write(100);
  const fs::path shard = ckpt / "shard-0.safetensors";
  std::string bytes = read_bytes(shard);
  bytes[8] = '[';  // the header's opening brace
  write_bytes(shard, bytes);
  expect_load_fails<Corruption>(ckpt, {shard.string(), "header is not valid JSON"});
}

TEST_F(CheckpointTest, HugeHeaderLengthIsRejected) {
  const fs::path ckpt = write(100);
  const fs::path shard = ckpt / "shard-1.safetensors";
  std::string bytes = read_bytes(shard);
  for (int i = 0; i < 8; ++i) bytes[i] = '\xFF';
  write_bytes(shard, bytes);
  expect_load_fails<Corruption>(ckpt, {shard.string(), "header length 18446744073709551615"});
}

TEST_F(CheckpointTest, CorruptManifestJson) {
  const fs::path ckpt = write(100);
  write_bytes(ckpt / "manifest.json", "{\"format\": ");
  expect_load_fails<Corruption>(ckpt, {(ckpt / "manifest.json").string(), "not valid JSON"});
}

TEST_F(CheckpointTest, ManifestMustNotPointOutsideTheCheckpoint) {
  const fs::path ckpt = write(100);
  nlohmann::json j = nlohmann::json::parse(read_bytes(ckpt / "manifest.json"));
  j["shards"][0]["file"] = "../ckpt-1/shard-0.safetensors";
  write_bytes(ckpt / "manifest.json", j.dump());
  expect_load_fails<Corruption>(ckpt, {"not a plain file name"});
}

TEST_F(CheckpointTest, MissingShardIsNotFound) {
  const fs::path ckpt = write(100);
  fs::remove(ckpt / "shard-1.safetensors");
  expect_load_fails<NotFound>(ckpt, {(ckpt / "shard-1.safetensors").string(), "shard file is missing"});
}

TEST_F(CheckpointTest, WithoutManifestACheckpointIsIgnored) {
  write(100);
  write(200);
  EXPECT_EQ(latest_checkpoint(dir()), dir() / "ckpt-200");
  fs::remove(dir() / "ckpt-200" / "manifest.json");
  EXPECT_EQ(latest_checkpoint(dir()), dir() / "ckpt-100");
  expect_load_fails<NotFound>(dir() / "ckpt-200", {"incomplete"});
  std::optional<ValidCheckpoint> v = load_latest_valid(dir());
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->checkpoint.step(), 100);
  EXPECT_TRUE(v->skipped.empty());  // an incomplete checkpoint is not a failure to report
}

TEST_F(CheckpointTest, LoadLatestValidFallsBackPastCorruptionAndSaysWhy) {
  write(100, 1.0f);
  write(200, 2.0f);
  flip_byte(dir() / "ckpt-200" / "shard-0.safetensors", 20);
  std::optional<ValidCheckpoint> v = load_latest_valid(dir());
  ASSERT_TRUE(v.has_value());
  EXPECT_EQ(v->checkpoint.step(), 100);
  EXPECT_EQ(v->checkpoint.tensor("dense1/w").to_vector<float>()[0], 1.0f);
  ASSERT_EQ(v->skipped.size(), 1u);
  EXPECT_NE(v->skipped[0].find("ckpt-200"), std::string::npos) << v->skipped[0];
  EXPECT_NE(v->skipped[0].find("fails its CRC32C check"), std::string::npos) << v->skipped[0];
}

TEST_F(CheckpointTest, LoadLatestValidWhenNothingLoads) {
  EXPECT_FALSE(load_latest_valid(dir()).has_value());
  EXPECT_FALSE(load_latest_valid(dir() / "does-not-exist").has_value());
  write(100);
  flip_byte(dir() / "ckpt-100" / "shard-1.safetensors", 0);
  EXPECT_THROW(load_latest_valid(dir()), Corruption);
}

TEST_F(CheckpointTest, KeepLastRemovesOldCheckpointsAndOldDebris) {
  for (std::int64_t step : {10, 20, 30, 40, 50}) write(step);
  fs::create_directories(dir() / "ckpt-5");   // debris of a crashed write, older than all kept
  fs::create_directories(dir() / "ckpt-60");  // perhaps being written right now
  fs::create_directories(dir() / "other");    // not ours
  std::vector<fs::path> removed = keep_last(dir(), 2);
  EXPECT_EQ(removed.size(), 4u);
  for (const char* gone : {"ckpt-5", "ckpt-10", "ckpt-20", "ckpt-30"}) EXPECT_FALSE(fs::exists(dir() / gone)) << gone;
  for (const char* kept : {"ckpt-40", "ckpt-50", "ckpt-60", "other"}) EXPECT_TRUE(fs::exists(dir() / kept)) << kept;
  std::vector<CheckpointRef> left = list_checkpoints(dir());
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].step, 40);
  EXPECT_TRUE(keep_last(dir(), 5).empty());
  EXPECT_THROW(keep_last(dir(), 0), InvalidArgument);
}

TEST_F(CheckpointTest, StepsSortNumericallyNotByName) {
  write(9);
  write(10);
  EXPECT_EQ(latest_checkpoint(dir()), dir() / "ckpt-10");
}

TEST_F(CheckpointTest, RewritingAStepMakesItIncompleteUntilPublished) {
  write(100, 1.0f);
  CheckpointWriter again(dir(), 100);
  EXPECT_FALSE(latest_checkpoint(dir()).has_value());
  again.add_shard("shard-0", {{"dense1/w", Tensor::full(Shape{1}, 9.0f)}});
  again.publish();
  Checkpoint c = Checkpoint::load(dir() / "ckpt-100");
  EXPECT_EQ(c.tensors().size(), 1u);  // the stale shard-1 file is not in the new manifest
  EXPECT_EQ(c.tensor("dense1/w").to_vector<float>(), std::vector<float>{9.0f});
}

TEST_F(CheckpointTest, ShardsWrittenElsewhereJoinTheManifest) {
  // What a parameter server will do: write its own shard, then report it to the publisher.
  CheckpointWriter w(dir(), 7);
  ShardInfo info = write_shard(w.dir(), "ps-3", {{"emb/w", Tensor::full(Shape{4}, 1.5f)}});
  w.add_written_shard(info);
  w.publish();
  EXPECT_EQ(Checkpoint::load(dir() / "ckpt-7").tensor("emb/w").to_vector<float>(), std::vector<float>(4, 1.5f));
}

TEST_F(CheckpointTest, RejectsDuplicateTensorsAndBadShardNames) {
  CheckpointWriter w(dir(), 1);
  w.add_shard("a", {{"x", Tensor::scalar(1)}});
  EXPECT_THROW(w.add_shard("b", {{"x", Tensor::scalar(2)}}), InvalidArgument);
  EXPECT_FALSE(fs::exists(w.dir() / "b.safetensors"));
  EXPECT_THROW(w.add_shard("a", {{"y", Tensor::scalar(2)}}), InvalidArgument);
  EXPECT_THROW(w.add_shard("../escape", {}), InvalidArgument);
  EXPECT_THROW(w.add_shard(".hidden", {}), InvalidArgument);
  w.publish();
  EXPECT_THROW(w.publish(), InvalidArgument);
}

TEST_F(CheckpointTest, DirectoryAndManifestMustAgreeOnTheStep) {
  write(100);
  fs::rename(dir() / "ckpt-100", dir() / "ckpt-200");
  expect_load_fails<Corruption>(dir() / "ckpt-200", {"the manifest says step 100"});
}

}  // namespace
}  // namespace trib
