#include "net/handshake.h"

#include <openssl/core_names.h>
#include <openssl/hmac.h>
#include <openssl/kdf.h>
#include <openssl/rand.h>

#include <chrono>
#include <cstring>

#include "net/frame_reader.h"
#include "net/frame_writer.h"
#include "net/little_endian.h"
#include "net/untrusted_log.h"

namespace trib::net {
namespace {

using Clock = std::chrono::steady_clock;
using Bytes = std::vector<std::byte>;
constexpr std::size_t kNonceBytes = 32;
constexpr std::size_t kProofBytes = 32;
constexpr std::uint64_t kMaxHandshakeFrame = 1024;
using Nonce = std::array<std::byte, kNonceBytes>;
using Proof = std::array<std::byte, kProofBytes>;

// A handshake step's time: what is left of the whole handshake's deadline.
struct Deadline {
  Clock::time_point at;
  std::chrono::milliseconds left() const {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(at - Clock::now());
    return std::max(ms, std::chrono::milliseconds(1));
  }
};

Nonce random_nonce() {
  Nonce n;
  TRIB_CHECK(RAND_bytes(reinterpret_cast<unsigned char*>(n.data()), n.size()) == 1, Error,
             "OpenSSL RAND_bytes failed");
  return n;
}

Proof hmac(std::span<const std::byte> key, std::string_view label,
           std::span<const std::byte> data) {
  Bytes message(label.size());
  std::memcpy(message.data(), label.data(), label.size());
  message.insert(message.end(), data.begin(), data.end());
  Proof out;
  unsigned int len = 0;
  TRIB_CHECK(HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
                  reinterpret_cast<const unsigned char*>(message.data()), message.size(),
                  reinterpret_cast<unsigned char*>(out.data()), &len) != nullptr &&
                 len == out.size(),
             Error, "OpenSSL HMAC-SHA256 failed");
  return out;
}

void append(Bytes& out, std::span<const std::byte> bytes) {
  out.insert(out.end(), bytes.begin(), bytes.end());
}

void append_label(Bytes& out, const PeerIdentity& id) {
  out.push_back(static_cast<std::byte>(id.role.size()));
  append(out, std::as_bytes(std::span(id.role)));
  std::array<std::byte, 4> index;
  store_le(index.data(), id.index);
  append(out, index);
}

// Reads fields of a handshake body with bounds checks; any shortfall is malformed.
class BodyParser {
 public:
  BodyParser(const std::string& body, std::string what)
      : bytes_(std::as_bytes(std::span(body))), what_(std::move(what)) {}
  std::span<const std::byte> take(std::size_t n) {
    if (n > bytes_.size()) {
      throw FrameRejected(FrameRejected::Kind::malformed, fmt::format("truncated {}", what_));
    }
    auto out = bytes_.first(n);
    bytes_ = bytes_.subspan(n);
    return out;
  }
  template <std::size_t N> std::array<std::byte, N> take_array() {
    std::array<std::byte, N> out;
    std::memcpy(out.data(), take(N).data(), N);
    return out;
  }
  PeerIdentity take_label(const std::string& address) {
    PeerIdentity id;
    auto len = std::to_integer<std::size_t>(take(1)[0]);
    auto role = take(len);
    id.role.assign(reinterpret_cast<const char*>(role.data()), role.size());
    id.index = load_le<std::int32_t>(take(4).data());
    id.address = address;
    try {
      validate_role(id.role);
    } catch (const InvalidArgument& e) {
      throw FrameRejected(FrameRejected::Kind::malformed, fmt::format("{}: {}", what_, e.what()));
    }
    return id;
  }
  void expect_end() {
    if (!bytes_.empty()) {
      throw FrameRejected(FrameRejected::Kind::malformed, fmt::format("oversized {}", what_));
    }
  }

 private:
  std::span<const std::byte> bytes_;
  std::string what_;
};

// One side's view of the exchange; both sides build the same transcript.
struct Exchange {
  int fd;
  const NetContext& context;
  std::string address;
  Deadline deadline;
  FrameReader reader;

  Exchange(int fd_, const NetContext& ctx, std::string addr)
      : fd(fd_), context(ctx), address(std::move(addr)),
        deadline{Clock::now() + ctx.options().handshake_timeout},
        reader(fd_, "peer at " + address, kMaxHandshakeFrame) {}

  void send(MessageType type, std::span<const std::byte> body) {
    OutgoingFrame frame{type, 0, 0, body, nullptr};
    write_frame(fd, frame, 0, nullptr, deadline.left(), "peer at " + address);
  }

  // The next frame, which must be `expected` (or a reject, turned into Unauthenticated).
  InboundFrame receive(MessageType expected) {
    InboundFrame frame;
    try {
      frame = reader.read(nullptr, 0, deadline.left());
    } catch (const Timeout&) {
      throw Timeout(fmt::format("handshake with {} timed out after {} ms", address,
                                context.options().handshake_timeout.count()));
    }
    if (frame.type() == MessageType::reject) {
      context.stats().auth_failures++;
      throw Unauthenticated(fmt::format("{} rejected the handshake: {}", address,
                                        printable(frame.body.substr(0, 200))));
    }
    if (frame.type() != expected) {
      throw FrameRejected(FrameRejected::Kind::malformed,
                          fmt::format("handshake with {}: expected {}, got {}", address,
                                      message_type_name(expected),
                                      message_type_name(frame.type())));
    }
    return frame;
  }

  void reject(std::string_view reason) noexcept {
    try {
      send(MessageType::reject, std::as_bytes(std::span(reason)));
    } catch (...) {
      // The peer may already be gone; the rejection stands either way.
    }
  }
};

Bytes transcript(MacAlgorithm mac, const Nonce& client_nonce, const Nonce& server_nonce,
                 const PeerIdentity& client, const PeerIdentity& server) {
  Bytes t;
  std::string_view version = "trib-handshake-v2";
  append(t, std::as_bytes(std::span(version)));
  t.push_back(static_cast<std::byte>(mac));
  append(t, client_nonce);
  append(t, server_nonce);
  append_label(t, client);
  append_label(t, server);
  return t;
}

// HKDF-SHA256 (RFC 5869) through OpenSSL's KDF: the secret as input key material, the
// transcript (both fresh nonces) as salt, and the direction as info. Each connection and
// each direction so gets its own key, and no key ever sees a sequence number twice.
SessionKey hkdf(const NetContext& context, const Bytes& salt, std::string_view info) {
  EVP_KDF* kdf = EVP_KDF_fetch(nullptr, "HKDF", nullptr);
  TRIB_CHECK(kdf != nullptr, Error, "OpenSSL has no HKDF");
  EVP_KDF_CTX* ctx = EVP_KDF_CTX_new(kdf);
  EVP_KDF_free(kdf);
  TRIB_CHECK(ctx != nullptr, Error, "OpenSSL EVP_KDF_CTX_new failed");
  char digest[] = "SHA256";
  auto secret = context.secret().bytes();
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, const_cast<std::byte*>(secret.data()),
                                        secret.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, const_cast<std::byte*>(salt.data()),
                                        salt.size()),
      OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, const_cast<char*>(info.data()),
                                        info.size()),
      OSSL_PARAM_END};
  SessionKey key{};
  int ok = EVP_KDF_derive(ctx, reinterpret_cast<unsigned char*>(key.data()), key.size(), params);
  EVP_KDF_CTX_free(ctx);
  TRIB_CHECK(ok == 1, Error, "OpenSSL HKDF failed");
  return key;
}

SessionKeys derive_keys(const NetContext& context, MacAlgorithm mac, const Bytes& t,
                        bool is_client) {
  SessionKeys keys;
  keys.mac = mac;
  SessionKey c2s = hkdf(context, t, "trib-v2 client-to-server");
  SessionKey s2c = hkdf(context, t, "trib-v2 server-to-client");
  keys.send = is_client ? c2s : s2c;
  keys.receive = is_client ? s2c : c2s;
  OPENSSL_cleanse(c2s.data(), c2s.size());
  OPENSSL_cleanse(s2c.data(), s2c.size());
  return keys;
}

template <typename Body>
HandshakeResult counting_failures(const NetContext& context, Body body) {
  try {
    return body();
  } catch (...) {
    context.stats().handshake_failures++;
    throw;
  }
}

}  // namespace

HandshakeResult client_handshake(int fd, const NetContext& context, MacAlgorithm mac,
                                 const std::string& address) {
  return counting_failures(context, [&] {
    Exchange ex(fd, context, address);
    Nonce client_nonce = random_nonce();
    Bytes hello{static_cast<std::byte>(mac)};
    append(hello, client_nonce);
    append_label(hello, context.self());
    ex.send(MessageType::hello, hello);

    InboundFrame challenge = ex.receive(MessageType::challenge);
    BodyParser parser(challenge.body, "challenge from " + address);
    Nonce server_nonce = parser.take_array<kNonceBytes>();
    PeerIdentity server = parser.take_label(address);
    parser.expect_end();

    Bytes t = transcript(mac, client_nonce, server_nonce, context.self(), server);
    ex.send(MessageType::proof, hmac(context.secret().bytes(), "client-proof", t));

    InboundFrame welcome = ex.receive(MessageType::welcome);
    BodyParser welcome_parser(welcome.body, "welcome from " + address);
    Proof server_proof = welcome_parser.take_array<kProofBytes>();
    welcome_parser.expect_end();
    Proof expected = hmac(context.secret().bytes(), "server-proof", t);
    if (CRYPTO_memcmp(server_proof.data(), expected.data(), expected.size()) != 0) {
      context.stats().auth_failures++;
      ex.reject("server proof invalid");
      throw Unauthenticated(fmt::format(
          "{} failed to prove the cluster secret (wrong secret on one side?)",
          server.to_string()));
    }
    return HandshakeResult{server, derive_keys(context, mac, t, true)};
  });
}

HandshakeResult server_handshake(int fd, const NetContext& context, const std::string& address,
                                 const std::function<void()>& hello_received) {
  return counting_failures(context, [&] {
    Exchange ex(fd, context, address);
    InboundFrame hello = ex.receive(MessageType::hello);
    if (hello_received) hello_received();
    BodyParser parser(hello.body, "hello from " + address);
    auto raw_mac = std::to_integer<std::uint8_t>(parser.take(1)[0]);
    if (!is_valid_mac_algorithm(raw_mac)) {
      ex.reject("unknown MAC algorithm");
      throw FrameRejected(FrameRejected::Kind::malformed,
                          fmt::format("hello from {} asks for unknown MAC algorithm {}", address,
                                      raw_mac));
    }
    auto mac = static_cast<MacAlgorithm>(raw_mac);
    Nonce client_nonce = parser.take_array<kNonceBytes>();
    PeerIdentity client = parser.take_label(address);
    parser.expect_end();
    // Encryption is a floor: a node that encrypts talks to no one in clear.
    if (context.options().encryption && !encrypts(mac)) {
      ex.reject("this node requires encrypted frames (security.encryption); the peer proposed " +
                std::string(mac_algorithm_name(mac)));
      throw Unauthenticated(fmt::format(
          "{} ({} {}) proposed {} frames without encryption, but this node requires encryption "
          "(set security.encryption the same on every node)",
          address, client.role, client.index, mac_algorithm_name(mac)));
    }

    Nonce server_nonce = random_nonce();
    Bytes challenge;
    append(challenge, server_nonce);
    append_label(challenge, context.self());
    ex.send(MessageType::challenge, challenge);

    Bytes t = transcript(mac, client_nonce, server_nonce, client, context.self());
    InboundFrame proof = ex.receive(MessageType::proof);
    BodyParser proof_parser(proof.body, "proof from " + address);
    Proof client_proof = proof_parser.take_array<kProofBytes>();
    proof_parser.expect_end();
    Proof expected = hmac(context.secret().bytes(), "client-proof", t);
    if (CRYPTO_memcmp(client_proof.data(), expected.data(), expected.size()) != 0) {
      context.stats().auth_failures++;
      ex.reject("authentication failed (wrong cluster secret?)");
      throw Unauthenticated(fmt::format("{} (claiming to be {} {}) failed to prove the cluster "
                                        "secret",
                                        address, client.role, client.index));
    }
    ex.send(MessageType::welcome, hmac(context.secret().bytes(), "server-proof", t));
    return HandshakeResult{client, derive_keys(context, mac, t, false)};
  });
}

}  // namespace trib::net
