#include "collectives/tensor_view.h"

#include <memory>

namespace trib::collectives::detail {
namespace {

struct ViewOwner {
  Tensor base;  // keeps the memory alive while the view lives
  std::function<void()> on_release;
};

void release_view(void* owner, std::byte*, std::size_t) {
  std::unique_ptr<ViewOwner> o(static_cast<ViewOwner*>(owner));
  if (o->on_release) o->on_release();
}

// Hands out one storage over existing memory: Tensor::empty then wraps it with the right
// dtype and shape, which is the only public way to make a tensor over given memory.
class WrapAllocator final : public Allocator {
 public:
  explicit WrapAllocator(std::shared_ptr<Storage> storage) : storage_(std::move(storage)) {}
  std::shared_ptr<Storage> allocate(std::size_t) override { return std::move(storage_); }

 private:
  std::shared_ptr<Storage> storage_;
};

}  // namespace

Tensor byte_view(const Tensor& base, std::size_t byte_offset, std::size_t bytes, DType dtype,
                 std::function<void()> on_release) {
  TRIB_CHECK(base.defined() && byte_offset + bytes <= base.nbytes() && bytes % dtype_size(dtype) == 0,
             InvalidArgument, "view of {} bytes at byte {} does not fit in {}", bytes, byte_offset,
             base.spec_string());
  auto* data = static_cast<std::byte*>(base.raw_data()) + byte_offset;
  auto owner = std::make_unique<ViewOwner>(ViewOwner{base, std::move(on_release)});
  auto storage = std::make_shared<Storage>(data, bytes, &release_view, owner.get());
  owner.release();  // now owned by the storage
  WrapAllocator wrap(std::move(storage));
  return Tensor::empty(dtype, Shape{static_cast<std::int64_t>(bytes / dtype_size(dtype))}, &wrap);
}

Tensor flat_view(const Tensor& base, std::int64_t offset, std::int64_t count,
                 std::function<void()> on_release) {
  const std::size_t size = dtype_size(base.dtype());
  return byte_view(base, static_cast<std::size_t>(offset) * size, static_cast<std::size_t>(count) * size,
                   base.dtype(), std::move(on_release));
}

}  // namespace trib::collectives::detail
