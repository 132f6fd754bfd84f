#include "net/untrusted_log.h"

#include <fmt/format.h>

namespace trib::net {

std::string printable(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) out.push_back(c);
    else out += fmt::format("\\x{:02x}", u);
  }
  return out;
}

UntrustedLog::UntrustedLog(LogSink sink, std::chrono::milliseconds interval)
    : sink_(std::move(sink)), interval_(interval) {}

void UntrustedLog::report(std::string_view kind, std::string_view line) {
  std::lock_guard lock(mu_);
  auto now = Clock::now();
  if (now - interval_start_ >= interval_) flush_locked(now);
  if (written_ < kBurst) {
    ++written_;
    if (sink_) sink_(printable(line));
    return;
  }
  auto it = suppressed_.find(kind);
  if (it == suppressed_.end()) it = suppressed_.emplace(std::string(kind), 0).first;
  ++it->second;
}

void UntrustedLog::flush() {
  std::lock_guard lock(mu_);
  auto now = Clock::now();
  if (now - interval_start_ >= interval_) flush_locked(now);
}

void UntrustedLog::flush_locked(Clock::time_point now) {
  if (!suppressed_.empty() && sink_) {
    std::uint64_t total = 0;
    std::string counts;
    for (const auto& [kind, n] : suppressed_) {
      total += n;
      counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", n, kind);
    }
    auto seconds = std::chrono::duration<double>(now - interval_start_).count();
    sink_(fmt::format("{} more line(s) about untrusted peers held back in the last {:.0f} s: {}",
                      total, seconds, counts));
  }
  suppressed_.clear();
  written_ = 0;
  interval_start_ = now;
}

}  // namespace trib::net
