// Runs kcat, the external Kafka client the tests check interoperability with.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

namespace trib::stream::testing {

inline bool have_kcat() { return std::system("command -v kcat > /dev/null 2>&1") == 0; }

// kcat's stdout for `arguments` (under a 10 s timeout).
inline std::string run_kcat(const std::string& arguments) {
  std::string command = "timeout 10 kcat " + arguments + " 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  std::string out;
  char buffer[4096];
  while (pipe && std::fgets(buffer, sizeof buffer, pipe.get()) != nullptr) out += buffer;
  return out;
}

#define TRIB_REQUIRE_KCAT()                                                                        \
  do {                                                                                             \
    if (!::trib::stream::testing::have_kcat())                                                     \
      GTEST_SKIP() << "kcat is not installed (apt-get install kcat); this test checks that an "    \
                      "external Kafka client can use the built-in broker";                         \
  } while (0)

}  // namespace trib::stream::testing
