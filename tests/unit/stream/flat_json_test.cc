#include "stream/flat_json.h"

#include <nlohmann/json.hpp>

#include <gtest/gtest.h>

#include "trib/stream/event_generator.h"

namespace trib::stream::detail {
namespace {

const SlotMap kSlots = {{"a", 0}, {"b", 1}, {"c", 2}};

struct Scan {
  bool handled = false;
  std::vector<double> values = std::vector<double>(3);
  std::vector<bool> seen = std::vector<bool>(3);
};

Scan scan(std::string_view bytes) {
  Scan s;
  s.handled = scan_flat_object(bytes, kSlots, s.values, s.seen);
  return s;
}

// What nlohmann's parser (the reference) reads for the named keys.
Scan reference(std::string_view bytes) {
  Scan s;
  nlohmann::json j = nlohmann::json::parse(bytes);
  for (const auto& [name, slot] : kSlots) {
    if (!j.contains(name)) continue;
    s.values[slot] = j[name].is_boolean() ? (j[name].get<bool>() ? 1.0 : 0.0) : j[name].get<double>();
    s.seen[slot] = true;
  }
  s.handled = true;
  return s;
}

TEST(FlatJsonTest, AgreesWithTheReferenceParserOnWhatItHandles) {
  for (const char* record : {
           R"({"a":1,"b":2.5,"c":-3})",
           R"( { "a" : 1e3 , "b":-0.25E-2,"c":0 , "other": "text", "x": true } )",
           R"({"b":true,"a":false})",
           R"({"a":1,"a":2})",  // the last duplicate wins, as in the reference
           R"({})",
           "{\"a\":\t7,\n\"b\":\r8}",
       }) {
    Scan fast = scan(record);
    ASSERT_TRUE(fast.handled) << record;
    Scan ref = reference(record);
    EXPECT_EQ(fast.values, ref.values) << record;
    EXPECT_EQ(fast.seen, ref.seen) << record;
  }
}

TEST(FlatJsonTest, AgreesWithTheReferenceOnGeneratedEvents) {
  EventGenerator generator({.seed = 9});
  SlotMap slots;
  const auto& names = EventGenerator::feature_names();
  for (std::size_t i = 0; i < names.size(); ++i) slots[names[i]] = static_cast<int>(i);
  for (int n = 0; n < 500; ++n) {
    const std::string record = EventGenerator::encode(generator.next(1'700'000'000'000 + n), RecordFormat::json);
    std::vector<double> values(names.size());
    std::vector<bool> seen(names.size());
    ASSERT_TRUE(scan_flat_object(record, slots, values, seen)) << record;
    nlohmann::json j = nlohmann::json::parse(record);
    for (std::size_t i = 0; i < names.size(); ++i) EXPECT_EQ(values[i], j[names[i]].get<double>()) << record;
  }
}

TEST(FlatJsonTest, DeclinesWhatTheReferenceMustJudge) {
  for (const char* record : {
           R"({"a":"1"})",          // a string where a number belongs
           R"({"a":null})",
           R"({"a":[1]})",
           R"({"x":{"y":1},"a":1})",  // nesting, even under another key
           R"({"a\u0062":1})",      // escapes
           R"({"a":01})",           // not JSON numbers
           R"({"a":1.})",
           R"({"a":+1})",
           R"({"a":inf})",
           R"({"a":1,})",
           R"({"a":1} extra)",
           R"([1,2])",
           "",
       }) {
    EXPECT_FALSE(scan(record).handled) << record;
  }
}

}  // namespace
}  // namespace trib::stream::detail
