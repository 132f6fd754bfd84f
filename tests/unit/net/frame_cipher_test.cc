// AES-256-GCM frame encryption: fed in any pieces it gives the same bytes, every key,
// nonce (sequence) and header bit matters, and any altered byte fails the tag.
#include "net/frame_cipher.h"

#include <gtest/gtest.h>

#include <numeric>

#include "net/frame_writer.h"

namespace trib::net {
namespace {

SessionKey key(int seed) {
  SessionKey k{};
  for (std::size_t i = 0; i < k.size(); ++i) k[i] = static_cast<std::byte>(seed * 31 + static_cast<int>(i));
  return k;
}

std::vector<std::byte> bytes(std::size_t n) {
  std::vector<std::byte> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::byte>(i * 7 + 3);
  return v;
}

struct Sealed {
  std::vector<std::byte> cipher;
  MacTag tag;
};

Sealed seal(const SessionKey& k, std::uint64_t seq, std::span<const std::byte> header,
            std::span<const std::byte> plain, std::size_t piece) {
  FrameCipher c(FrameCipher::Direction::seal, k);
  c.begin(seq, header);
  Sealed s{std::vector<std::byte>(plain.size()), {}};
  for (std::size_t off = 0; off < plain.size(); off += piece) {
    std::size_t n = std::min(piece, plain.size() - off);
    c.encrypt(plain.subspan(off, n), std::span(s.cipher).subspan(off, n));
  }
  s.tag = c.finish_seal();
  return s;
}

bool open(const SessionKey& k, std::uint64_t seq, std::span<const std::byte> header,
          std::vector<std::byte> cipher, const MacTag& tag, std::size_t piece,
          std::vector<std::byte>* plain = nullptr) {
  FrameCipher c(FrameCipher::Direction::open, k);
  c.begin(seq, header);
  for (std::size_t off = 0; off < cipher.size(); off += piece) {
    c.decrypt(std::span(cipher).subspan(off, std::min(piece, cipher.size() - off)));
  }
  if (plain) *plain = cipher;
  return c.finish_open(tag);
}

TEST(FrameCipher, PiecesOfAnySizeGiveTheSameCiphertextAndDecryptBack) {
  auto header = bytes(56), plain = bytes(100000);
  Sealed whole = seal(key(1), 5, header, plain, plain.size());
  for (std::size_t piece : {1u, 7u, 4096u, 65536u}) {
    Sealed s = seal(key(1), 5, header, plain, piece);
    EXPECT_EQ(s.cipher, whole.cipher) << piece;
    EXPECT_TRUE(tags_equal(s.tag, whole.tag)) << piece;
    std::vector<std::byte> back;
    EXPECT_TRUE(open(key(1), 5, header, s.cipher, s.tag, piece + 3, &back)) << piece;
    EXPECT_EQ(back, plain) << piece;
  }
  EXPECT_NE(whole.cipher, plain);
}

TEST(FrameCipher, KeySequenceHeaderAndEveryByteAreAuthenticated) {
  auto header = bytes(56), plain = bytes(5000);
  Sealed s = seal(key(1), 9, header, plain, 1000);
  EXPECT_FALSE(open(key(2), 9, header, s.cipher, s.tag, 1000));
  EXPECT_FALSE(open(key(1), 10, header, s.cipher, s.tag, 1000));  // a replay under another number
  auto other_header = header;
  other_header[6] ^= std::byte{2};
  EXPECT_FALSE(open(key(1), 9, other_header, s.cipher, s.tag, 1000));
  auto flipped = s.cipher;
  flipped[4321] ^= std::byte{1};
  EXPECT_FALSE(open(key(1), 9, header, flipped, s.tag, 1000));
  MacTag bad_tag = s.tag;
  bad_tag[0] ^= std::byte{1};
  EXPECT_FALSE(open(key(1), 9, header, s.cipher, bad_tag, 1000));
  // A fresh sequence number gives a fresh keystream: no two frames share one.
  EXPECT_NE(seal(key(1), 10, header, plain, 1000).cipher, s.cipher);
}

TEST(FrameCipher, MacOnlyClassRefusesTheEncryptingAlgorithm) {
  EXPECT_THROW(FrameMac(MacAlgorithm::aes256_gcm, key(1)), InvalidArgument);
}

TEST(FrameCipher, SealedFrameIsFlaggedAndCarriesItsTagLast) {
  std::string body = "hello";
  Tensor t = Tensor::full(Shape{3}, 2.0f);
  OutgoingFrame f{MessageType::request, 1, 4, std::as_bytes(std::span(body)), &t};
  FrameCipher c(FrameCipher::Direction::seal, key(3));
  std::vector<std::byte> frame = encrypted_frame_bytes(f, 1, c);
  FrameHeader h = decode_header_fields(std::span(frame).first<kHeaderBytes>());
  EXPECT_TRUE(h.encrypted());
  EXPECT_TRUE(h.has_tensor());
  EXPECT_EQ(frame.size(), kHeaderBytes + h.payload_length + kMacBytes);
  EXPECT_EQ(h.mac, MacTag{});
}

}  // namespace
}  // namespace trib::net
