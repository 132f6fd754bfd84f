#include "cluster/store_protocol.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "trib/core/error.h"

namespace trib::cluster::proto {
namespace {

using json = nlohmann::json;

std::string_view method_name(std::uint32_t method) {
  switch (method) {
    case kStoreSet: return "store set";
    case kStoreGet: return "store get";
    case kStoreAdd: return "store add";
    case kJoin: return "join";
    case kLeave: return "leave";
    default: return "unknown";
  }
}

std::string text_field(const json& body, const char* name, std::size_t max_bytes) {
  const json& v = body.at(name);
  TRIB_CHECK(v.is_string(), InvalidArgument, "'{}' must be a string", name);
  const std::string& s = v.get_ref<const std::string&>();
  TRIB_CHECK(s.size() <= max_bytes, InvalidArgument, "'{}' has {} bytes, at most {}", name, s.size(),
             max_bytes);
  return s;
}

std::int64_t int_field(const json& body, const char* name) {
  const json& v = body.at(name);
  TRIB_CHECK(v.is_number_integer(), InvalidArgument, "'{}' must be an integer", name);
  return v.get<std::int64_t>();
}

Request decode_fields(std::uint32_t method, const json& body) {
  TRIB_CHECK(body.is_object(), InvalidArgument, "the body is not a JSON object");
  Request r;
  r.method = static_cast<Method>(method);
  switch (method) {
    case kStoreSet:
      r.key = text_field(body, "key", kMaxKeyBytes);
      r.value = text_field(body, "value", kMaxValueBytes);
      return r;
    case kStoreGet:
      r.key = text_field(body, "key", kMaxKeyBytes);
      return r;
    case kStoreAdd:
      r.key = text_field(body, "key", kMaxKeyBytes);
      r.delta = int_field(body, "delta");
      return r;
    case kJoin:
    case kLeave: {
      r.role = text_field(body, "role", kMaxRoleBytes);
      bool has_index = method == kLeave || body.contains("index");
      std::int64_t index = has_index ? int_field(body, "index") : -1;
      TRIB_CHECK(index >= -1 && index < (1 << 20), InvalidArgument, "'index' {} is out of range", index);
      r.index = static_cast<int>(index);
      if (method == kJoin && body.contains("rejoin")) {
        TRIB_CHECK(body.at("rejoin").is_boolean(), InvalidArgument, "'rejoin' must be true or false");
        r.rejoin = body.at("rejoin").get<bool>();
        TRIB_CHECK(!r.rejoin || index >= 0, InvalidArgument, "a rejoin names the index it holds");
        r.incarnation = r.rejoin ? int_field(body, "incarnation") : 0;
        r.generation = r.rejoin ? int_field(body, "generation") : 0;
        TRIB_CHECK(r.incarnation >= 0 && r.generation >= 0, InvalidArgument,
                   "'incarnation' and 'generation' must not be negative");
      }
      return r;
    }
    default:
      throw InvalidArgument(fmt::format("unknown method 0x{:x}", method));
  }
}

}  // namespace

Request decode_request(std::uint32_t method, std::string_view body) {
  try {
    TRIB_CHECK(body.size() <= kMaxRequestBytes, InvalidArgument, "the body has {} bytes, at most {}",
               body.size(), kMaxRequestBytes);
    return decode_fields(method, body.empty() ? json::object() : json::parse(body));
  } catch (const json::exception& e) {
    throw InvalidArgument(fmt::format("coordinator: malformed {} request: {}", method_name(method), e.what()));
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(fmt::format("coordinator: malformed {} request: {}", method_name(method), e.what()));
  }
}

}  // namespace trib::cluster::proto
