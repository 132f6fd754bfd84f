// What the benchmark programs share for running other processes: a shell command's output,
// iperf3's loopback figure, and line-framed pipes to forked ranks.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace trib::bench {

// Everything `cmd` (run by the shell) printed on stdout.
inline std::string run_command(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  pclose(p);
  return out;
}

// iperf3's single-stream loopback figure in bytes per second (received), over `seconds` (at
// least 1) against a one-shot server on `port`; nullopt when iperf3 is missing or says nothing.
inline std::optional<double> iperf3_bytes_per_s(int port, double seconds) {
  if (std::system("iperf3 --version >/dev/null 2>&1") != 0) return std::nullopt;
  std::system(fmt::format("iperf3 -s -1 -p {} >/dev/null 2>&1 &", port).c_str());
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::string json = run_command(
      fmt::format("iperf3 -c 127.0.0.1 -p {} -t {:.0f} -J 2>/dev/null", port, std::max(1.0, seconds)));
  try {
    return nlohmann::json::parse(json)["end"]["sum_received"]["bits_per_second"].get<double>() / 8;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

// Line-framed messages between a parent and its forked ranks over pipes. A failed write
// ends the child at once (its parent reports the missing result).
inline void write_all(int fd, const std::string& s) {
  for (std::size_t done = 0; done < s.size();) {
    ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n <= 0) std::_Exit(10);
    done += static_cast<std::size_t>(n);
  }
}

// The next line from `fd`, without its newline; "" at the end of the stream.
inline std::string read_line(int fd) {
  std::string line;
  char c;
  while (::read(fd, &c, 1) == 1 && c != '\n') line += c;
  return line;
}

}  // namespace trib::bench
