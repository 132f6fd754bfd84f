#include "trib/core/log.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "trib/core/error.h"

namespace trib {
namespace {

struct Captured {
  std::vector<std::string> lines;
  Log log(LogLevel level) {
    return Log("trib.test", level, [this](std::string_view l) { lines.emplace_back(l); });
  }
};

TEST(Log, LinesCarryTimestampLevelAndName) {
  Captured c;
  Log log = c.log(LogLevel::info);
  log.info("hello {}", 42);
  ASSERT_EQ(c.lines.size(), 1u);
  EXPECT_TRUE(std::regex_match(c.lines[0],
                               std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z info \[trib\.test\] hello 42)")))
      << c.lines[0];
}

TEST(Log, LevelsFilter) {
  Captured c;
  Log log = c.log(LogLevel::warn);
  log.debug("d");
  log.info("i");
  log.warn("w");
  log.error("e");
  ASSERT_EQ(c.lines.size(), 2u);
  EXPECT_NE(c.lines[0].find(" warning [trib.test] w"), std::string::npos) << c.lines[0];
  EXPECT_NE(c.lines[1].find(" error [trib.test] e"), std::string::npos) << c.lines[1];
  log.set_level(LogLevel::debug);
  log.debug("d2");
  EXPECT_EQ(c.lines.size(), 3u);
  log.set_level(LogLevel::off);
  log.error("gone");
  EXPECT_EQ(c.lines.size(), 3u);
}

TEST(Log, NamedSharesOutputAndLevel) {
  Captured c;
  Log log = c.log(LogLevel::info);
  Log net = log.named("trib.net");
  net.debug("hidden");
  net.info("peer gone");
  ASSERT_EQ(c.lines.size(), 1u);
  EXPECT_NE(c.lines[0].find("[trib.net] peer gone"), std::string::npos);
}

TEST(Log, ParseLevel) {
  EXPECT_EQ(parse_log_level("debug"), LogLevel::debug);
  EXPECT_EQ(parse_log_level("info"), LogLevel::info);
  EXPECT_EQ(parse_log_level("warn"), LogLevel::warn);
  EXPECT_EQ(parse_log_level("error"), LogLevel::error);
  EXPECT_EQ(parse_log_level("off"), LogLevel::off);
  EXPECT_THROW(parse_log_level("verbose"), InvalidArgument);
  for (LogLevel l : {LogLevel::debug, LogLevel::info, LogLevel::warn, LogLevel::error, LogLevel::off})
    EXPECT_EQ(parse_log_level(to_string(l)), l);
}

TEST(EscapeForLog, NonPrintableBytesBecomeHex) {
  EXPECT_EQ(escape_for_log("plain text: ok/[1]"), "plain text: ok/[1]");
  EXPECT_EQ(escape_for_log("a\nb"), "a\\x0ab");
  EXPECT_EQ(escape_for_log("\x1b[2J"), "\\x1b[2J");  // a terminal escape cannot clear the screen
  EXPECT_EQ(escape_for_log(std::string("\0x", 2)), "\\x00x");
  EXPECT_EQ(escape_for_log("caf\xc3\xa9\x7f"), "caf\\xc3\\xa9\\x7f");
}

TEST(EscapeForLog, EscapingTwiceIsEscapingOnce) {
  std::string once = escape_for_log("forged\r\n2026-01-01 error [trib] x\t");
  EXPECT_EQ(escape_for_log(once), once);
  EXPECT_EQ(once.find('\n'), std::string::npos);
  EXPECT_EQ(once.find('\r'), std::string::npos);
}

}  // namespace
}  // namespace trib
