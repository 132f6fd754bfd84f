// Logs with levels and timestamps, for the people who run a job: "2026-11-23T22:50:35.123
// info [trib.net] connection from ...". A Log is an explicit object passed down (never a
// global), so that one process can hold several (tests run many nodes as threads) and the
// launcher can route its children's logs above a live progress line. Progress lines and
// tables that people read are not logs: they are printed as they are, without timestamps.
//
// spdlog does the formatting and the locking; this header keeps it out of every includer.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace spdlog {
class logger;
}

namespace trib {

enum class LogLevel { debug, info, warn, error, off };

// "debug", "info", "warn", "error" or "off"; anything else is InvalidArgument naming the value.
LogLevel parse_log_level(std::string_view name);
std::string_view to_string(LogLevel level);

// Receives one formatted line (timestamp, level, name, message) without its newline.
using LogWriter = std::function<void(std::string_view line)>;

class Log {
 public:
  // Writes to stderr.
  explicit Log(std::string name = "trib", LogLevel level = LogLevel::info);
  // Writes each line through `writer` (a launcher's board, a test's vector).
  Log(std::string name, LogLevel level, LogWriter writer);

  // The same output and level under another name ("trib.net").
  Log named(std::string name) const;

  void set_level(LogLevel level);
  LogLevel level() const;
  bool enabled(LogLevel level) const { return level >= this->level() && level != LogLevel::off; }

  void write(LogLevel level, std::string_view message) const;

  template <typename... A>
  void debug(fmt::format_string<A...> f, A&&... a) const { emit(LogLevel::debug, f, std::forward<A>(a)...); }
  template <typename... A>
  void info(fmt::format_string<A...> f, A&&... a) const { emit(LogLevel::info, f, std::forward<A>(a)...); }
  template <typename... A>
  void warn(fmt::format_string<A...> f, A&&... a) const { emit(LogLevel::warn, f, std::forward<A>(a)...); }
  template <typename... A>
  void error(fmt::format_string<A...> f, A&&... a) const { emit(LogLevel::error, f, std::forward<A>(a)...); }

 private:
  explicit Log(std::shared_ptr<spdlog::logger> logger) : logger_(std::move(logger)) {}
  template <typename... A>
  void emit(LogLevel level, fmt::format_string<A...> f, A&&... a) const {
    if (enabled(level)) write(level, fmt::format(f, std::forward<A>(a)...));
  }
  std::shared_ptr<spdlog::logger> logger_;
};

// A string that came from the network or a file, made safe to log: every byte that is not
// printable ASCII (control characters, escape sequences, bytes >= 0x7f) becomes \xNN, so a
// peer cannot forge log lines or drive the terminal. Printable text (the backslash too) is
// kept, which makes escaping twice the same as escaping once.
std::string escape_for_log(std::string_view text);

}  // namespace trib
