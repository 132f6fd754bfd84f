// Shared helpers for the network tests: contexts with short timeouts, a log sink that
// records lines, an allocator that records sizes, and a raw authenticated TCP peer that
// can send arbitrary bytes after a genuine handshake (to replay, alter or truncate frames).
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "net/frame_cipher.h"
#include "net/frame_mac.h"
#include "net/frame_reader.h"
#include "net/frame_writer.h"
#include "net/handshake.h"
#include "net/socket_io.h"
#include "trib/core/allocator.h"
#include "trib/net/net_context.h"

namespace trib::net::testing {

// Records log lines; thread-safe.
class LogCapture {
 public:
  LogSink sink();
  std::vector<std::string> lines() const;
  // Whether some line contains every fragment, waiting up to `timeout` for it to appear.
  bool wait_for(const std::vector<std::string>& fragments,
                std::chrono::milliseconds timeout = std::chrono::milliseconds(3000)) const;

 private:
  mutable std::mutex mu_;
  std::vector<std::string> lines_;
};

// Counts what received tensors allocate, to show that rejected frames allocate nothing.
class CountingAllocator : public Allocator {
 public:
  std::shared_ptr<Storage> allocate(std::size_t bytes) override;
  std::size_t largest() const { return largest_.load(); }
  std::size_t count() const { return count_.load(); }

 private:
  std::atomic<std::size_t> largest_{0};
  std::atomic<std::size_t> count_{0};
};

// Short timeouts so liveness tests finish in about a second.
NetOptions fast_options();
ClusterSecret test_secret();
ClusterSecret other_secret();

std::shared_ptr<NetContext> make_context(std::string role, int index,
                                         NetOptions options = fast_options(),
                                         ClusterSecret secret = test_secret(),
                                         LogCapture* log = nullptr);

// Polls `condition` until true or `timeout` passes.
bool eventually(const std::function<bool()>& condition,
                std::chrono::milliseconds timeout = std::chrono::milliseconds(3000));

// A TCP client that runs the real handshake, then lets the test write any bytes.
class RawClient {
 public:
  RawClient(const std::string& address, const NetContext& context);

  int fd() const { return socket_.fd(); }
  // A correctly sealed frame with the next sequence number (advances the counter).
  std::vector<std::byte> seal(const OutgoingFrame& frame);
  // Seals with an explicit sequence number (does not advance the counter).
  std::vector<std::byte> seal_with_sequence(const OutgoingFrame& frame, std::uint64_t sequence);
  void send_bytes(std::span<const std::byte> bytes);
  // A hand-made clear frame (header + payload) as this session carries it: on an encrypted
  // session, flagged kFlagEncrypted, its payload encrypted and the tag appended, so that
  // the server's checks after decryption see exactly the crafted bytes.
  std::vector<std::byte> as_session_frame(std::vector<std::byte> clear);
  // Reads the next frame from the server (skipping heartbeats), verifying its MAC.
  InboundFrame read_frame(std::chrono::milliseconds timeout = std::chrono::milliseconds(3000));
  // Whether the server closed the socket within `timeout`.
  bool closed_by_peer(std::chrono::milliseconds timeout = std::chrono::milliseconds(3000));

  const HandshakeResult& handshake() const { return handshake_; }

 private:
  Socket socket_;
  HandshakeResult handshake_;
  // MAC-only or encrypted, as the handshake agreed.
  std::unique_ptr<FrameMac> send_mac_, receive_mac_;
  std::unique_ptr<FrameCipher> send_cipher_, receive_cipher_;
  std::uint64_t send_sequence_ = 0;
  std::uint64_t receive_sequence_ = 0;
};

}  // namespace trib::net::testing
