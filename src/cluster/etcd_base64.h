// etcd's JSON gateway carries keys and values as base64 (OpenSSL's EVP codec underneath).
#pragma once

#include <string>
#include <string_view>

namespace trib::cluster::etcd {

std::string base64_encode(std::string_view bytes);
// Throws Corruption naming `what` (the endpoint and key it came with) if `text` is not base64.
std::string base64_decode(std::string_view text, std::string_view what);

// The smallest key above every key that starts with `prefix` (etcd's range_end for a prefix).
std::string prefix_end(std::string_view prefix);

}  // namespace trib::cluster::etcd
