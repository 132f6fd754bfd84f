// Log lines caused by untrusted peers (refused connections, failed handshakes). An attacker
// controls how many there are and part of what they say, so they are escaped (no newline or
// escape code from the network reaches the log) and rate-limited: at most kBurst lines per
// interval are written; the rest are counted by kind and summed up in one line per interval.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "trib/net/net_context.h"

namespace trib::net {

// `text` with every byte outside printable ASCII written as \xNN (so applying it twice
// changes nothing more).
std::string printable(std::string_view text);

class UntrustedLog {
 public:
  static constexpr int kBurst = 5;
  UntrustedLog(LogSink sink, std::chrono::milliseconds interval);

  // `kind` groups lines in the summary ("handshake failed"); `line` is written if the
  // interval's burst is not spent.
  void report(std::string_view kind, std::string_view line);
  // Writes the summary of an interval that has ended, if anything was held back.
  void flush();

 private:
  using Clock = std::chrono::steady_clock;
  void flush_locked(Clock::time_point now);

  LogSink sink_;
  std::chrono::milliseconds interval_;
  std::mutex mu_;
  Clock::time_point interval_start_ = Clock::now();
  int written_ = 0;
  std::map<std::string, std::uint64_t, std::less<>> suppressed_;
};

}  // namespace trib::net
