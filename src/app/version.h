// What `trib --version` prints: this build and the libraries it runs on.
#pragma once

#include <string>

namespace trib::app {

// "trib 0.1 (commit <git describe>)", then one line each for oneDNN and librdkafka, with
// the versions loaded at run time (the shared libraries, not the headers built against).
std::string version_text();

}  // namespace trib::app
