#include "net/frame_mac.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "net/little_endian.h"
#include "trib/core/error.h"

namespace trib::net {
namespace {

const auto* as_uchar(const std::byte* p) { return reinterpret_cast<const unsigned char*>(p); }
auto* as_uchar(std::byte* p) { return reinterpret_cast<unsigned char*>(p); }

void check_ssl(int ok, const char* what) {
  TRIB_CHECK(ok == 1, Error, "OpenSSL {} failed", what);
}

// EVP update calls take an int length; a 1 GiB frame must be fed in pieces.
constexpr std::size_t kMaxUpdate = std::size_t{1} << 30;

}  // namespace

// The AEAD modes (poly1305, gmac) use an EVP_CIPHER_CTX whose additional data is all
// frame bytes; HMAC uses an EVP_MAC_CTX. Both are created once and re-keyed per frame.
struct FrameMac::Ctx {
  EVP_CIPHER_CTX* cipher = nullptr;
  EVP_MAC* mac = nullptr;
  EVP_MAC_CTX* mac_ctx = nullptr;
  ~Ctx() {
    EVP_CIPHER_CTX_free(cipher);
    EVP_MAC_CTX_free(mac_ctx);
    EVP_MAC_free(mac);
  }
};

FrameMac::FrameMac(MacAlgorithm algorithm, const SessionKey& key)
    : algorithm_(algorithm), ctx_(std::make_unique<Ctx>()) {
  TRIB_CHECK(!encrypts(algorithm), InvalidArgument, "{} encrypts: use FrameCipher",
             mac_algorithm_name(algorithm));
  if (algorithm == MacAlgorithm::hmac_sha256) {
    ctx_->mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
    TRIB_CHECK(ctx_->mac != nullptr, Error, "OpenSSL has no HMAC");
    ctx_->mac_ctx = EVP_MAC_CTX_new(ctx_->mac);
    char digest[] = "SHA256";
    OSSL_PARAM params[] = {
        OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0), OSSL_PARAM_END};
    check_ssl(EVP_MAC_init(ctx_->mac_ctx, as_uchar(key.data()), key.size(), params),
              "HMAC init");
    return;
  }
  const EVP_CIPHER* cipher = algorithm == MacAlgorithm::poly1305 ? EVP_chacha20_poly1305()
                                                                 : EVP_aes_256_gcm();
  ctx_->cipher = EVP_CIPHER_CTX_new();
  TRIB_CHECK(ctx_->cipher != nullptr, Error, "OpenSSL EVP_CIPHER_CTX_new failed");
  check_ssl(EVP_EncryptInit_ex(ctx_->cipher, cipher, nullptr, as_uchar(key.data()), nullptr),
            "MAC cipher init");
}

FrameMac::~FrameMac() = default;

void FrameMac::begin(std::uint64_t sequence) {
  if (ctx_->mac_ctx) {
    // A null key re-uses the key set at construction; the sequence is inside the header.
    check_ssl(EVP_MAC_init(ctx_->mac_ctx, nullptr, 0, nullptr), "HMAC re-init");
    return;
  }
  // 96-bit nonce: the sequence number, little-endian, then four zero bytes.
  std::array<std::byte, 12> nonce{};
  store_le(nonce.data(), sequence);
  check_ssl(EVP_EncryptInit_ex(ctx_->cipher, nullptr, nullptr, nullptr, as_uchar(nonce.data())),
            "MAC nonce");
}

void FrameMac::update(std::span<const std::byte> bytes) {
  while (!bytes.empty()) {
    std::size_t n = std::min(bytes.size(), kMaxUpdate);
    if (ctx_->mac_ctx) {
      check_ssl(EVP_MAC_update(ctx_->mac_ctx, as_uchar(bytes.data()), n), "HMAC update");
    } else {
      int out_len = 0;
      // A null output buffer makes these bytes additional (authenticated) data.
      check_ssl(EVP_EncryptUpdate(ctx_->cipher, nullptr, &out_len, as_uchar(bytes.data()),
                                  static_cast<int>(n)),
                "MAC update");
    }
    bytes = bytes.subspan(n);
  }
}

MacTag FrameMac::finish() {
  MacTag tag{};
  if (ctx_->mac_ctx) {
    std::array<unsigned char, EVP_MAX_MD_SIZE> full{};
    std::size_t len = 0;
    check_ssl(EVP_MAC_final(ctx_->mac_ctx, full.data(), &len, full.size()), "HMAC final");
    std::memcpy(tag.data(), full.data(), tag.size());  // truncated to 16 bytes
    OPENSSL_cleanse(full.data(), full.size());
    return tag;
  }
  unsigned char none[16];
  int out_len = 0;
  check_ssl(EVP_EncryptFinal_ex(ctx_->cipher, none, &out_len), "MAC final");
  check_ssl(EVP_CIPHER_CTX_ctrl(ctx_->cipher, EVP_CTRL_AEAD_GET_TAG, static_cast<int>(tag.size()),
                                as_uchar(tag.data())),
            "MAC tag");
  return tag;
}

HeaderBytes header_for_mac(const FrameHeader& header) {
  FrameHeader zeroed = header;
  zeroed.mac = {};
  return encode_header(zeroed);
}

bool tags_equal(const MacTag& a, const MacTag& b) {
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

}  // namespace trib::net
