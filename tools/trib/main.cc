// The `trib` command: everything lives in the library; see trib/app/cli.h.
#include "trib/app/cli.h"

int main(int argc, char** argv) { return trib::app::run_cli(argc, argv); }
