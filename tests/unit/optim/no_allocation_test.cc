// Checks that optimizer steps after the first allocate nothing, by counting calls to the
// global operator new (replaced for this test binary only).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "trib/optim/optimizer_config.h"

namespace {
std::atomic<long> g_allocations{0};  // test-only instrumentation of operator new
}  // namespace

// GCC inlines these into library code and then sees free() on what it believes came from the
// built-in operator new; here both sides are ours and do use malloc/free.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

void* operator new(std::size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace trib {
namespace {

TEST(NoAllocation, DenseAndSparseStepsAfterTheFirst) {
  for (const std::string& name : optimizer_names()) {
    // RMSProp with momentum and centering, so that every slot it can have is exercised.
    const bool rms = name == "rmsprop";
    auto opt = make_optimizer(OptimizerConfig{
        .name = name, .momentum = rms ? std::optional<float>(0.5f) : std::nullopt, .centered = rms});
    ASSERT_EQ(opt->name(), name);
    SlotStore slots;
    Tensor p = Tensor::full(Shape{16, 8}, 1.0f);
    Tensor g = Tensor::full(Shape{16, 8}, 0.5f);
    Tensor rows = Tensor::full(Shape{5, 8}, 0.25f);
    Tensor ids = Tensor::from_vector(Shape{5}, std::vector<std::int64_t>{3, 1, 3, 15, 0});
    const std::string var = "a/rather/long/variable/name/beyond/small/string/size";
    opt->apply(var, p, g, slots, 0.1f);
    opt->apply_sparse(var, p, rows, ids, slots, 0.1f);

    const long before = g_allocations.load();
    for (int step = 0; step < 3; ++step) {
      opt->apply(var, p, g, slots, 0.1f);
      opt->apply_sparse(var, p, rows, ids, slots, 0.1f);
    }
    EXPECT_EQ(g_allocations.load() - before, 0) << name;
  }
}

}  // namespace
}  // namespace trib
