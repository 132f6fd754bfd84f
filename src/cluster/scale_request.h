// How `trib scale RUN_DIR --workers N` reaches the launcher of a running local job: a file in
// the run directory, which the launcher polls, acts on and removes. A file, not the
// coordinator's store: the command then needs no secret and no address, only the directory
// the user already names, and a request left by a launcher that died is simply never taken.
#pragma once

#include <filesystem>
#include <optional>

namespace trib::cluster {

// RUN_DIR/scale-request, holding "workers N\n".
std::filesystem::path scale_request_path(const std::filesystem::path& run_dir);
// Writes the request whole (a temporary file, then a rename), replacing any earlier one.
void request_scale(const std::filesystem::path& run_dir, int workers);
// The launcher's side: the worker count asked for, if a request is there; it is removed.
// Throws InvalidArgument for a file that does not hold a request (it is removed too).
std::optional<int> take_scale_request(const std::filesystem::path& run_dir);
bool scale_request_pending(const std::filesystem::path& run_dir);


}  // namespace trib::cluster
