#include "cluster/launcher_env.h"

#include <array>
#include <charconv>
#include <cstdlib>
#include <limits>
#include <string_view>

#include <fmt/format.h>

#include "trib/core/error.h"

namespace trib::cluster {
namespace {

struct VariablePair {
  const char* launcher;
  const char* rank;
  const char* size;  // nullptr: the launcher gives no size
};

// Slurm first: under `srun --mpi=pmix` or an MPI inside an allocation, the Slurm task id is
// the one that matches the allocation's view; then the MPI launchers, whose names cannot
// be mistaken. torchrun's RANK and WORLD_SIZE are common words that other tools may set,
// so they come after every MPI launcher; JOB_COMPLETION_INDEX last, as it gives no size.
constexpr std::array<VariablePair, 5> kLaunchers{{
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS"},
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"PMI", "PMI_RANK", "PMI_SIZE"},
    {"torchrun", "RANK", "WORLD_SIZE"},
    {"Kubernetes", "JOB_COMPLETION_INDEX", nullptr},
}};

int parse_int(const char* variable, std::string_view s, int min, int max, std::string_view expected) {
  int value = -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  TRIB_CHECK(!s.empty() && ec == std::errc() && end == s.data() + s.size() && value >= min && value <= max,
             InvalidArgument, "{}='{}' is not {}", variable, s, expected);
  return value;
}

int parse_count(const char* variable, const char* text) {
  return parse_int(variable, text, 0, std::numeric_limits<int>::max(), "a non-negative integer");
}

}  // namespace

std::optional<LauncherRank> detect_launcher_rank() {
  // The launcher's variables are the interface here: this is the one place that reads them,
  // and it hands the result on as a value.
  for (const VariablePair& p : kLaunchers) {
    const char* rank = std::getenv(p.rank);
    if (p.size == nullptr) {
      if (rank == nullptr) continue;
      return LauncherRank{parse_count(p.rank, rank), -1, p.launcher, p.rank, ""};
    }
    const char* size = std::getenv(p.size);
    if (rank == nullptr && size == nullptr) continue;
    TRIB_CHECK(rank != nullptr && size != nullptr, InvalidArgument, "{} is set but {} is not: a {} launch sets both",
               rank ? p.rank : p.size, rank ? p.size : p.rank, p.launcher);
    LauncherRank r{parse_count(p.rank, rank), parse_count(p.size, size), p.launcher, p.rank, p.size};
    TRIB_CHECK(r.size >= 1 && r.rank < r.size, InvalidArgument, "{}={} is not a rank below {}={}", p.rank, r.rank,
               p.size, r.size);
    return r;
  }
  return std::nullopt;
}

LauncherRank launcher_rank() {
  std::optional<LauncherRank> r = detect_launcher_rank();
  TRIB_CHECK(r.has_value(), InvalidArgument,
             "no launcher rank found: start this under srun, mpirun, torchrun or a Kubernetes indexed Job (looked "
             "for SLURM_PROCID/SLURM_NTASKS, OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE, PMI_RANK/PMI_SIZE, "
             "RANK/WORLD_SIZE and JOB_COMPLETION_INDEX)");
  return *r;
}

std::optional<std::string> launcher_coordinator() {
  const char* addr = std::getenv("MASTER_ADDR");
  const char* port = std::getenv("MASTER_PORT");
  if (addr == nullptr && port == nullptr) return std::nullopt;
  TRIB_CHECK(addr != nullptr && port != nullptr, InvalidArgument,
             "{} is set but {} is not: the coordinator's address needs both", addr ? "MASTER_ADDR" : "MASTER_PORT",
             addr ? "MASTER_PORT" : "MASTER_ADDR");
  std::string_view host = addr;
  TRIB_CHECK(!host.empty(), InvalidArgument, "MASTER_ADDR is empty: expected the coordinator's host");
  const int p = parse_int("MASTER_PORT", port, 1, 65535, "a port in 1..65535");
  const bool bare_ipv6 = host.find(':') != std::string_view::npos && !host.starts_with('[');
  return bare_ipv6 ? fmt::format("[{}]:{}", host, p) : fmt::format("{}:{}", host, p);
}

}  // namespace trib::cluster
