#include "trib/data/prefetcher.h"

#include <chrono>
#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "unit/data/data_test_util.h"
#include "trib/core/error.h"
#include "trib/data/batcher.h"
#include "trib/data/dataset_source.h"

namespace trib::data {
namespace {

using testing::counting_dataset;
using testing::drain_epoch;

std::unique_ptr<BatchStream> shuffled_batches(std::int64_t size = 100) {
  return std::make_unique<Batcher>(
      std::make_unique<DatasetSource>(counting_dataset(size), DatasetSourceOptions{.shuffle = true, .seed = 1}), 8,
      false);
}

// Gives `good` batches, then throws IoError.
class FailingStream final : public BatchStream {
 public:
  explicit FailingStream(int good) : good_(good) {}
  std::optional<Batch> next() override {
    if (given_++ == good_) throw IoError("disk went away while reading shard 3");
    return Batch(Tensor::full(Shape{1, 2}, 0.0f), Tensor::zeros(DType::i32, Shape{1}));
  }
  DataPosition position() const override { return {}; }
  void seek(const DataPosition&) override {}

 private:
  int good_;
  int given_ = 0;
};

// Gives `batches` batches, then has no more data: next() blocks until interrupt(), as an idle
// stream would.
class IdleStream final : public BatchStream {
 public:
  explicit IdleStream(int batches = 0) : batches_(batches) {}
  std::optional<Batch> next() override {
    if (batches_-- > 0) return Batch(Tensor::full(Shape{1, 2}, 0.0f), Tensor::zeros(DType::i32, Shape{1}));
    std::unique_lock lock(mu_);
    cv_.wait(lock, [this] { return interrupted_; });
    return std::nullopt;
  }
  DataPosition position() const override { return {}; }
  void seek(const DataPosition&) override {}
  void interrupt() override {
    std::lock_guard lock(mu_);
    interrupted_ = true;
    cv_.notify_all();
  }

 private:
  int batches_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool interrupted_ = false;
};

// Runs f on another thread and aborts the test binary (rather than hang until the CTest
// timeout) if it takes over 10 s.
template <typename F>
void within_seconds(F f) {
  std::packaged_task<void()> task(f);
  auto done = task.get_future();
  std::thread runner(std::move(task));
  if (done.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    std::fprintf(stderr, "hung for 10 s: aborting\n");
    std::abort();
  }
  runner.join();
  done.get();
}

TEST(PrefetcherTest, DeliversTheSameBatchesAsNoPrefetch) {
  auto direct = shuffled_batches();
  Prefetcher prefetched(shuffled_batches(), 3);
  for (int epoch = 0; epoch < 3; ++epoch) EXPECT_EQ(drain_epoch(prefetched), drain_epoch(*direct));
}

TEST(PrefetcherTest, RethrowsTheProducersExceptionOnTheConsumer) {
  Prefetcher prefetcher(std::make_unique<FailingStream>(2), 4);
  EXPECT_TRUE(prefetcher.next().has_value());
  EXPECT_TRUE(prefetcher.next().has_value());
  for (int attempt = 0; attempt < 2; ++attempt) {  // and keeps failing: the stream is broken
    try {
      prefetcher.next();
      FAIL() << "expected IoError";
    } catch (const IoError& e) {
      EXPECT_STREQ(e.what(), "disk went away while reading shard 3");
    }
  }
}

TEST(PrefetcherTest, PositionIsTheConsumersNotTheProducers) {
  auto direct = shuffled_batches();
  Prefetcher prefetched(shuffled_batches(), 4);
  for (int i = 0; i < 5; ++i) {
    direct->next();
    prefetched.next();
  }
  DataPosition saved = prefetched.position();
  EXPECT_EQ(saved, direct->position());
  auto rest = drain_epoch(prefetched);

  Prefetcher resumed(shuffled_batches(), 2);
  resumed.seek(saved);
  EXPECT_EQ(drain_epoch(resumed), rest);
}

TEST(PrefetcherTest, DestructionDoesNotHang) {
  within_seconds([] {
    Prefetcher full_queue(shuffled_batches(), 1);
    full_queue.next();  // the producer now waits for room
  });
  within_seconds([] {
    Prefetcher waiting_for_data(std::make_unique<IdleStream>(1), 2);
    waiting_for_data.next();  // the producer now waits inside upstream for data that never comes
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  });
}

TEST(PrefetcherTest, InterruptWakesABlockedConsumer) {
  Prefetcher prefetcher(std::make_unique<IdleStream>(), 2);
  within_seconds([&] {
    std::thread interrupter([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      prefetcher.interrupt();
    });
    EXPECT_FALSE(prefetcher.next().has_value());
    interrupter.join();
  });
}

}  // namespace
}  // namespace trib::data
