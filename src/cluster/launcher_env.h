// A process's rank among those a parallel launcher started together, read from the
// variables the launcher sets: `srun -n 3 trib node ...`, `mpirun -np 3 trib node ...`,
// `torchrun --nproc-per-node 3 trib node ...` or a Kubernetes indexed Job start one role per
// process without a hand-written list of who is what.
#pragma once

#include <optional>
#include <string>

namespace trib::cluster {

struct LauncherRank {
  int rank = 0;
  // -1: the launcher does not say (a Kubernetes indexed Job: its completions are not in
  // the environment), and `trib node --size` or the job's counts tell.
  int size = 1;
  std::string launcher;       // "Slurm", "Open MPI", "PMI", "torchrun", "Kubernetes"
  std::string rank_variable;  // "SLURM_PROCID", ...: named in messages about the rank
  std::string size_variable;  // empty when size is -1
};

// The first launcher whose variables are set, in this order:
//   Slurm       SLURM_PROCID / SLURM_NTASKS
//   Open MPI    OMPI_COMM_WORLD_RANK / OMPI_COMM_WORLD_SIZE
//   PMI         PMI_RANK / PMI_SIZE (MPICH's hydra, Slurm's PMI plugin)
//   torchrun    RANK / WORLD_SIZE (also Kubeflow's PyTorchJob)
//   Kubernetes  JOB_COMPLETION_INDEX: the rank only (size -1)
// nullopt when none is set. Throws InvalidArgument naming the variable when a pair is half
// set or its values are not a rank below a positive size.
std::optional<LauncherRank> detect_launcher_rank();

// As detect_launcher_rank(), but finding none is an InvalidArgument that lists the
// variables looked for.
LauncherRank launcher_rank();

// The coordinator's address from torchrun's (or a PyTorchJob's) MASTER_ADDR and MASTER_PORT,
// as HOST:PORT ([HOST]:PORT for an IPv6 address): where `trib node` joins when --join is
// absent. nullopt when neither is set; InvalidArgument, naming the variable, when only one
// is or the port is not in 1..65535.
std::optional<std::string> launcher_coordinator();

}  // namespace trib::cluster
