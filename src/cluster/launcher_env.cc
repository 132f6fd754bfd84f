#include "trib/cluster/launcher_env.h"

#include <array>
#include <charconv>
#include <cstdlib>
#include <string_view>

#include "trib/core/error.h"

namespace trib::cluster {
namespace {

struct VariablePair {
  const char* launcher;
  const char* rank;
  const char* size;
};

// Slurm first: under `srun --mpi=pmix` or an MPI inside an allocation, the Slurm task id is
// the one that matches the allocation's view; PMI last, as the generic fallback that MPICH's
// hydra and Slurm's PMI plugin both set.
constexpr std::array<VariablePair, 3> kPairs{{
    {"Slurm", "SLURM_PROCID", "SLURM_NTASKS"},
    {"Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"PMI", "PMI_RANK", "PMI_SIZE"},
}};

int parse_count(const char* variable, const char* text) {
  std::string_view s(text);
  int value = -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  TRIB_CHECK(!s.empty() && ec == std::errc() && end == s.data() + s.size() && value >= 0, InvalidArgument,
             "{}='{}' is not a non-negative integer", variable, s);
  return value;
}

}  // namespace

std::optional<LauncherRank> detect_launcher_rank() {
  // The launcher's variables are the interface here: this is the one place that reads them,
  // and it hands the result on as a value.
  for (const VariablePair& p : kPairs) {
    const char* rank = std::getenv(p.rank);
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
             "no launcher rank found: start this under srun or mpirun (looked for SLURM_PROCID/SLURM_NTASKS, "
             "OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE and PMI_RANK/PMI_SIZE)");
  return *r;
}

}  // namespace trib::cluster
