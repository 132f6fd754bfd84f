#include "net/frame_writer.h"

#include <algorithm>
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

iovec piece_of(std::span<const std::byte> bytes) { return piece(bytes.data(), bytes.size()); }

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

void seal_encrypted(const OutgoingFrame& frame, std::uint64_t sequence, FrameCipher& cipher,
                    std::vector<std::byte>& scratch, const ByteSink& emit) {
  SealedFrame clear = seal_frame(frame, sequence, nullptr);
  clear.header.flags |= kFlagEncrypted;
  clear.header_bytes = encode_header(clear.header);  // mac field zero: as authenticated
  cipher.begin(sequence, clear.header_bytes);
  scratch.resize(kCipherChunkBytes);
  // The header leads the first chunk, so a small frame leaves in one send.
  std::memcpy(scratch.data(), clear.header_bytes.data(), kHeaderBytes);
  std::size_t filled = kHeaderBytes;
  auto put = [&](std::span<const std::byte> plain) {
    while (!plain.empty()) {
      if (filled == scratch.size()) {
        emit(std::span(scratch).first(filled), false);
        filled = 0;
      }
      std::size_t n = std::min(plain.size(), scratch.size() - filled);
      cipher.encrypt(plain.first(n), std::span(scratch).subspan(filled, n));
      filled += n;
      plain = plain.subspan(n);
    }
  };
  put(std::span(clear.descriptor).first(clear.descriptor_length));
  put(clear.body);
  put(clear.tensor_bytes);
  MacTag tag = cipher.finish_seal();
  if (scratch.size() - filled < tag.size()) {
    emit(std::span(scratch).first(filled), false);
    filled = 0;
  }
  std::memcpy(scratch.data() + filled, tag.data(), tag.size());
  emit(std::span(scratch).first(filled + tag.size()), true);
}

std::size_t write_encrypted_frame(int fd, const OutgoingFrame& frame, std::uint64_t sequence,
                                  FrameCipher& cipher, std::vector<std::byte>& scratch,
                                  std::chrono::milliseconds idle_timeout,
                                  const std::string& peer) {
  std::size_t written = 0;
  // MSG_MORE on all but the last piece: the kernel sends full segments, pushing only once
  // the frame is complete, as one sendmsg of the whole frame would.
  seal_encrypted(frame, sequence, cipher, scratch, [&](std::span<const std::byte> piece, bool last) {
    iovec iov = piece_of(piece);
    written += write_all(fd, std::span(&iov, 1), idle_timeout, peer, !last);
  });
  return written;
}

std::vector<std::byte> encrypted_frame_bytes(const OutgoingFrame& frame, std::uint64_t sequence,
                                             FrameCipher& cipher) {
  std::vector<std::byte> out, scratch;
  seal_encrypted(frame, sequence, cipher, scratch, [&](std::span<const std::byte> piece, bool) {
    out.insert(out.end(), piece.begin(), piece.end());
  });
  return out;
}

}  // namespace trib::net
