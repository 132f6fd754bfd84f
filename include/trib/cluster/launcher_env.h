// A process's rank among those a parallel launcher started together, read from the
// variables the launcher sets: `srun -n 3 trib node ...` and `mpirun -np 3 trib node ...`
// start one role per process without a hand-written list of who is what.
#pragma once

#include <optional>
#include <string>

namespace trib::cluster {

struct LauncherRank {
  int rank = 0;
  int size = 1;
  std::string launcher;       // "Slurm", "Open MPI", "PMI"
  std::string rank_variable;  // "SLURM_PROCID", ...: named in messages about the rank
  std::string size_variable;
};

// The first pair of variables set, in this order: SLURM_PROCID/SLURM_NTASKS,
// OMPI_COMM_WORLD_RANK/OMPI_COMM_WORLD_SIZE, PMI_RANK/PMI_SIZE. nullopt when none is set.
// Throws InvalidArgument naming the variable when a pair is half set or its values are not
// a rank below a positive size.
std::optional<LauncherRank> detect_launcher_rank();

// As detect_launcher_rank(), but finding none is an InvalidArgument that lists the
// variables looked for.
LauncherRank launcher_rank();

}  // namespace trib::cluster
