// The `trib` command: everything lives in the library; see src/app/cli.h.
#include "app/cli.h"

int main(int argc, char** argv) { return trib::app::run_cli(argc, argv); }
