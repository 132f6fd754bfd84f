// The `trib` command line: parses arguments and calls the library. Kept out of main() so
// that tests can run commands in-process.
#pragma once

namespace trib::app {

// Exit codes: 0 success, 1 a failure while running, 2 bad input (arguments, config, data,
// checkpoint), 130 interrupted.
int run_cli(int argc, char** argv);

}  // namespace trib::app
