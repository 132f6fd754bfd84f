#include <gtest/gtest.h>

#include "trib/optim/adam.h"
#include "trib/optim/slot_store.h"

namespace trib {
namespace {

TEST(SlotStore, CreatesSlotsOnceAndChecksTheirShape) {
  SlotStore slots;
  Tensor a = slots.get_or_create("dense/w", "m", DType::f32, Shape{2, 3}, 0.5f);
  EXPECT_EQ(a.to_vector<float>(), std::vector<float>(6, 0.5f));
  a.fill(2.0f);
  Tensor again = slots.get_or_create("dense/w", "m", DType::f32, Shape{2, 3});
  EXPECT_TRUE(again.shares_storage(a));
  EXPECT_THROW(slots.get_or_create("dense/w", "m", DType::f32, Shape{3, 2}), InvalidArgument);
  EXPECT_THROW(slots.get_or_create("dense/w", "bad/name", DType::f32, Shape{1}), InvalidArgument);
  EXPECT_THROW(slots.get("dense/w", "v"), NotFound);
}

TEST(SlotStore, RoundTripsThroughNamedTensors) {
  // Train two steps, save the slots as tensors, restore into a fresh store, and the third
  // step from the restored store must equal the third step from the original.
  Adam adam;
  SlotStore slots;
  Tensor p = Tensor::from_vector(Shape{2}, std::vector<float>{1, -2});
  Tensor g = Tensor::from_vector(Shape{2}, std::vector<float>{0.5f, -1});
  adam.apply("layer1/w", p, g, slots, 0.1f);
  adam.apply("layer1/w", p, g, slots, 0.1f);

  std::map<std::string, Tensor> saved = slots.to_tensors();
  ASSERT_EQ(saved.size(), 3u);
  EXPECT_TRUE(saved.count("slot/layer1/w/m"));
  EXPECT_TRUE(saved.count("slot/layer1/w/step"));
  saved.emplace("layer1/w", p);  // a variable beside the slots is ignored by load_tensors

  SlotStore restored;
  EXPECT_EQ(restored.load_tensors(saved), 3u);
  EXPECT_EQ(restored.keys(), slots.keys());
  Tensor p2 = p.clone();
  adam.apply("layer1/w", p, g, slots, 0.1f);
  adam.apply("layer1/w", p2, g, restored, 0.1f);
  EXPECT_EQ(p.to_vector<float>(), p2.to_vector<float>());
}

TEST(SlotStore, RejectsSlotTensorsWithoutASlotName) {
  SlotStore slots;
  std::map<std::string, Tensor> bad{{"slot/novariable", Tensor::scalar(1)}};
  EXPECT_THROW(slots.load_tensors(bad), InvalidArgument);
}

}  // namespace
}  // namespace trib
