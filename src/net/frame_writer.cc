#include "net/frame_writer.h"

#include <cstring>
#include <limits>

#include "net/frame_decoder.h"
#include "net/socket_io.h"

namespace trib::net {
namespace {

std::span<const std::byte> tensor_span(const Tensor* tensor) {
  if (tensor == nullptr || !tensor->defined()) return {};
  return {static_cast<const std::byte*>(tensor->raw_data()), tensor->nbytes()};
}

bool carries_tensor(const OutgoingFrame& frame) {
  return frame.tensor != nullptr && frame.tensor->defined();
}

iovec piece(const void* data, std::size_t size) {
  return iovec{const_cast<void*>(data), size};  // sendmsg does not write through it
}

}  // namespace

std::uint64_t payload_bytes(const OutgoingFrame& frame) {
  if (!carries_tensor(frame)) return frame.body.size();
  return descriptor_bytes(frame.tensor->shape().rank()) + frame.body.size() +
         frame.tensor->nbytes();
}

std::array<iovec, 4> SealedFrame::iovecs() {
  return {piece(header_bytes.data(), header_bytes.size()),
          piece(descriptor.data(), descriptor_length), piece(body.data(), body.size()),
          piece(tensor_bytes.data(), tensor_bytes.size())};
}

std::uint64_t SealedFrame::total_bytes() const {
  return kHeaderBytes + header.payload_length;
}

std::vector<std::byte> SealedFrame::to_bytes() const {
  std::vector<std::byte> out(header_bytes.begin(), header_bytes.end());
  out.insert(out.end(), descriptor.begin(), descriptor.begin() + descriptor_length);
  out.insert(out.end(), body.begin(), body.end());
  out.insert(out.end(), tensor_bytes.begin(), tensor_bytes.end());
  return out;
}

SealedFrame seal_frame(const OutgoingFrame& frame, std::uint64_t sequence, FrameMac* mac) {
  TRIB_CHECK(frame.body.size() <= std::numeric_limits<std::uint32_t>::max(), InvalidArgument,
             "message body of {} bytes exceeds the 4 GiB body limit", frame.body.size());
  SealedFrame sealed;
  FrameHeader& h = sealed.header;
  h.type = static_cast<std::uint8_t>(frame.type);
  h.method = frame.method;
  h.tag = frame.tag;
  h.sequence = sequence;
  h.body_length = static_cast<std::uint32_t>(frame.body.size());
  h.payload_length = payload_bytes(frame);
  if (carries_tensor(frame)) {
    h.flags |= kFlagHasTensor;
    sealed.descriptor_length = encode_descriptor(*frame.tensor, sealed.descriptor);
  }
  sealed.body = frame.body;
  sealed.tensor_bytes = tensor_span(frame.tensor);
  if (mac != nullptr) {
    mac->begin(sequence);
    mac->update(header_for_mac(h));
    mac->update(std::span(sealed.descriptor).first(sealed.descriptor_length));
    mac->update(sealed.body);
    mac->update(sealed.tensor_bytes);
    h.mac = mac->finish();
  }
  sealed.header_bytes = encode_header(h);
  return sealed;
}

std::size_t write_frame(int fd, const OutgoingFrame& frame, std::uint64_t sequence,
                        FrameMac* mac, std::chrono::milliseconds idle_timeout,
                        const std::string& peer) {
  SealedFrame sealed = seal_frame(frame, sequence, mac);
  auto iov = sealed.iovecs();
  return write_all(fd, iov, idle_timeout, peer);
}

}  // namespace trib::net
