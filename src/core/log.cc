#include "trib/core/log.h"

#include <cstdio>
#include <mutex>

#include <spdlog/logger.h>
#include <spdlog/pattern_formatter.h>
#include <spdlog/sinks/base_sink.h>

#include "trib/core/error.h"

namespace trib {

namespace {

// Hands each formatted line to a LogWriter; spdlog's base_sink serialises the calls.
class WriterSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  explicit WriterSink(LogWriter writer) : writer_(std::move(writer)) {}

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    spdlog::memory_buf_t buf;
    formatter_->format(msg, buf);
    std::string_view line(buf.data(), buf.size());
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
    writer_(line);
  }
  void flush_() override {}

 private:
  LogWriter writer_;
};

spdlog::level::level_enum to_spdlog(LogLevel l) {
  switch (l) {
    case LogLevel::debug: return spdlog::level::debug;
    case LogLevel::info: return spdlog::level::info;
    case LogLevel::warn: return spdlog::level::warn;
    case LogLevel::error: return spdlog::level::err;
    case LogLevel::off: break;
  }
  return spdlog::level::off;
}

LogLevel from_spdlog(spdlog::level::level_enum l) {
  switch (l) {
    case spdlog::level::trace:
    case spdlog::level::debug: return LogLevel::debug;
    case spdlog::level::info: return LogLevel::info;
    case spdlog::level::warn: return LogLevel::warn;
    case spdlog::level::err:
    case spdlog::level::critical: return LogLevel::error;
    default: return LogLevel::off;
  }
}

std::shared_ptr<spdlog::logger> make_logger(std::string name, LogLevel level, LogWriter writer) {
  auto sink = std::make_shared<WriterSink>(std::move(writer));
  // UTC with milliseconds: lines from several hosts sort together.
  sink->set_formatter(
      std::make_unique<spdlog::pattern_formatter>("%Y-%m-%dT%H:%M:%S.%eZ %l [%n] %v", spdlog::pattern_time_type::utc));
  auto logger = std::make_shared<spdlog::logger>(std::move(name), std::move(sink));
  logger->set_level(to_spdlog(level));
  return logger;
}

}  // namespace

LogLevel parse_log_level(std::string_view name) {
  if (name == "debug") return LogLevel::debug;
  if (name == "info") return LogLevel::info;
  if (name == "warn") return LogLevel::warn;
  if (name == "error") return LogLevel::error;
  if (name == "off") return LogLevel::off;
  throw InvalidArgument(fmt::format("log level '{}': expected debug, info, warn, error or off", escape_for_log(name)));
}

std::string_view to_string(LogLevel level) {
  switch (level) {
    case LogLevel::debug: return "debug";
    case LogLevel::info: return "info";
    case LogLevel::warn: return "warn";
    case LogLevel::error: return "error";
    case LogLevel::off: break;
  }
  return "off";
}

Log::Log(std::string name, LogLevel level)
    : Log(std::move(name), level, [](std::string_view line) {
        fmt::print(stderr, "{}\n", line);
        std::fflush(stderr);
      }) {}

Log::Log(std::string name, LogLevel level, LogWriter writer)
    : logger_(make_logger(std::move(name), level, std::move(writer))) {}

Log Log::named(std::string name) const { return Log(logger_->clone(std::move(name))); }

void Log::set_level(LogLevel level) { logger_->set_level(to_spdlog(level)); }

LogLevel Log::level() const { return from_spdlog(logger_->level()); }

void Log::write(LogLevel level, std::string_view message) const {
  if (enabled(level)) logger_->log(to_spdlog(level), spdlog::string_view_t(message.data(), message.size()));
}

std::string escape_for_log(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c >= 0x20 && c < 0x7f) out += static_cast<char>(c);
    else out += fmt::format("\\x{:02x}", c);
  }
  return out;
}

}  // namespace trib
