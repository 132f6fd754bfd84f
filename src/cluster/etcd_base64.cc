#include "cluster/etcd_base64.h"

#include <openssl/evp.h>

#include "trib/core/error.h"

namespace trib::cluster::etcd {

std::string base64_encode(std::string_view bytes) {
  if (bytes.empty()) return {};
  std::string out(4 * ((bytes.size() + 2) / 3), '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(bytes.data()), static_cast<int>(bytes.size()));
  out.resize(static_cast<std::size_t>(n));
  return out;
}

std::string base64_decode(std::string_view text, std::string_view what) {
  if (text.empty()) return {};
  // The decoded size follows from the text's length, which the response limit already bounds.
  TRIB_CHECK(text.size() % 4 == 0 && text.size() <= (1u << 30), Corruption,
             "etcd: {}: {} characters of base64 is not a whole number of 4-character groups", what, text.size());
  std::string out(text.size() / 4 * 3, '\0');
  int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                          reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  TRIB_CHECK(n >= 0, Corruption, "etcd: {}: the value is not valid base64", what);
  // EVP_DecodeBlock counts the padding as zero bytes.
  std::size_t pad = text.ends_with("==") ? 2 : text.ends_with("=") ? 1 : 0;
  out.resize(static_cast<std::size_t>(n) - pad);
  return out;
}

std::string prefix_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(end.back());
    if (last < 0xff) {
      ++last;
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key (etcd's convention for "no end")
}

}  // namespace trib::cluster::etcd
