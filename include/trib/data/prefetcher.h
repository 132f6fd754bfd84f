// Produces the next `depth` batches on a background thread while the trainer works on the
// current one, so that loading and converting overlap with compute.
//
// The producer starts on the first next() and stops on destruction or seek(). Each queued
// batch carries the upstream position after it, so position() is that of the last batch the
// consumer received, not of the producer running ahead: saving it and seeking back resumes
// exactly. An exception thrown while producing is rethrown by next() (and by every later
// call). No wait can hang: the producer's wait ends on shutdown and the consumer's on a batch,
// an error or interrupt().
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "trib/data/batch_stream.h"

namespace trib::data {

class Prefetcher final : public BatchStream {
 public:
  // depth >= 1 batches are produced ahead.
  Prefetcher(std::unique_ptr<BatchStream> upstream, int depth);
  ~Prefetcher() override;
  Prefetcher(const Prefetcher&) = delete;
  Prefetcher& operator=(const Prefetcher&) = delete;

  std::optional<Batch> next() override;
  DataPosition position() const override;
  void seek(const DataPosition& position) override;
  // After this, next() returns nullopt; the upstream source is interrupted too.
  void interrupt() override;

 private:
  struct Item {
    std::optional<Batch> batch;
    DataPosition after;
    std::exception_ptr error;
  };
  void start();
  void stop();
  void produce();

  std::unique_ptr<BatchStream> upstream_;  // used only by the producer while it runs
  std::size_t depth_;
  std::thread producer_;

  std::mutex mu_;
  std::condition_variable not_full_;
  std::condition_variable not_empty_;
  std::deque<Item> queue_;
  bool stopping_ = false;
  bool interrupted_ = false;

  // Consumer-side state.
  DataPosition delivered_;  // position after the last batch returned
  std::exception_ptr error_;
};

}  // namespace trib::data
