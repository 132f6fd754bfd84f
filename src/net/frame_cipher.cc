#include "net/frame_cipher.h"

#include <openssl/evp.h>

#include <algorithm>
#include <array>

#include "net/little_endian.h"
#include "trib/core/error.h"

namespace trib::net {
namespace {

const auto* as_uchar(const std::byte* p) { return reinterpret_cast<const unsigned char*>(p); }
auto* as_uchar(std::byte* p) { return reinterpret_cast<unsigned char*>(p); }

void check_ssl(int ok, const char* what) {
  TRIB_CHECK(ok == 1, Error, "OpenSSL AES-256-GCM {} failed", what);
}

// EVP update calls take an int length.
constexpr std::size_t kMaxUpdate = std::size_t{1} << 30;

}  // namespace

struct FrameCipher::Ctx {
  EVP_CIPHER_CTX* cipher = nullptr;
  ~Ctx() { EVP_CIPHER_CTX_free(cipher); }
};

FrameCipher::FrameCipher(Direction direction, const SessionKey& key)
    : direction_(direction), ctx_(std::make_unique<Ctx>()) {
  ctx_->cipher = EVP_CIPHER_CTX_new();
  TRIB_CHECK(ctx_->cipher != nullptr, Error, "OpenSSL EVP_CIPHER_CTX_new failed");
  check_ssl(EVP_CipherInit_ex(ctx_->cipher, EVP_aes_256_gcm(), nullptr, as_uchar(key.data()),
                              nullptr, direction == Direction::seal ? 1 : 0),
            "init");
}

FrameCipher::~FrameCipher() = default;

void FrameCipher::begin(std::uint64_t sequence, std::span<const std::byte> header) {
  // 96-bit nonce: the sequence number, little-endian, then four zero bytes (as FrameMac).
  std::array<std::byte, 12> nonce{};
  store_le(nonce.data(), sequence);
  check_ssl(EVP_CipherInit_ex(ctx_->cipher, nullptr, nullptr, nullptr, as_uchar(nonce.data()), -1),
            "nonce");
  int out_len = 0;
  check_ssl(EVP_CipherUpdate(ctx_->cipher, nullptr, &out_len, as_uchar(header.data()),
                             static_cast<int>(header.size())),
            "header");
}

void FrameCipher::encrypt(std::span<const std::byte> in, std::span<std::byte> out) {
  TRIB_CHECK(direction_ == Direction::seal && out.size() == in.size(), Error,
             "FrameCipher::encrypt misused");
  while (!in.empty()) {
    std::size_t n = std::min(in.size(), kMaxUpdate);
    int out_len = 0;
    check_ssl(EVP_CipherUpdate(ctx_->cipher, as_uchar(out.data()), &out_len,
                               as_uchar(in.data()), static_cast<int>(n)),
              "encrypt");
    in = in.subspan(n);
    out = out.subspan(n);
  }
}

void FrameCipher::decrypt(std::span<std::byte> bytes) {
  TRIB_CHECK(direction_ == Direction::open, Error, "FrameCipher::decrypt misused");
  while (!bytes.empty()) {
    std::size_t n = std::min(bytes.size(), kMaxUpdate);
    int out_len = 0;
    check_ssl(EVP_CipherUpdate(ctx_->cipher, as_uchar(bytes.data()), &out_len,
                               as_uchar(bytes.data()), static_cast<int>(n)),
              "decrypt");
    bytes = bytes.subspan(n);
  }
}

MacTag FrameCipher::finish_seal() {
  unsigned char none[16];
  int out_len = 0;
  check_ssl(EVP_CipherFinal_ex(ctx_->cipher, none, &out_len), "final");
  MacTag tag{};
  check_ssl(EVP_CIPHER_CTX_ctrl(ctx_->cipher, EVP_CTRL_AEAD_GET_TAG, static_cast<int>(tag.size()),
                                as_uchar(tag.data())),
            "tag");
  return tag;
}

bool FrameCipher::finish_open(const MacTag& tag) {
  MacTag expected = tag;
  check_ssl(EVP_CIPHER_CTX_ctrl(ctx_->cipher, EVP_CTRL_AEAD_SET_TAG,
                                static_cast<int>(expected.size()), as_uchar(expected.data())),
            "set tag");
  unsigned char none[16];
  int out_len = 0;
  // Compares the tags in constant time; fails for any altered byte.
  return EVP_CipherFinal_ex(ctx_->cipher, none, &out_len) > 0;
}

}  // namespace trib::net
