// Which MPI a job runs under, so that `mpiadvise run` preloads the tracing library built for it and
// `mpiadvise calibrate` runs the benchmark built for it. A library built against one MPI cannot trace a
// job of another: Open MPI's handles are pointers, MPICH's ints, and its libmpi would be loaded beside the
// job's (docs: platform notes).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace mpiadvise::cli {

// The launcher of a command line: Open MPI's mpirun (forwards environment with -x), MPICH's Hydra
// (-genv), or another (srun, a plain program: the ranks inherit the environment).
enum class Launcher { OpenMPI, Hydra, Other };
Launcher launcher_kind(const std::string& command_path);

// name as PATH finds it ("" when it does not), or name itself when it holds a '/'.
std::string search_path(const std::string& name);

// The MPI a program links, from the libraries its dynamic section needs: "openmpi" (libmpi.so.40 and
// Open MPI's Fortran libraries), "mpich" (libmpich.so.*, or libmpi.so.12: the MPICH ABI of MPICH, Intel
// MPI, MVAPICH), or "" (not an ELF program, or no MPI among its needed libraries, e.g. python3).
std::string program_mpi(const std::string& path);

struct MpiChoice {
  std::string mpi;  // "openmpi" or "mpich"
  std::string why;  // one line, e.g. "build/examples/pipeline links libmpi.so.40 (Open MPI)"
};

// The MPI of a job command line (the launcher and its arguments): the program's libmpi decides, else the
// launcher; neither known: the first MPI an installation has a tracing library for. A program whose
// libmpi disagrees with the launcher is an error naming both. program: the program of the command line.
MpiChoice choose_mpi(const std::vector<std::string>& command, const std::string& program_path);

// A file of the per-MPI installation (lib/mpiadvise/MPI/FILE) beside the mpiadvise command or under the
// installation prefix; throws naming where it looked.
std::filesystem::path mpi_file(const std::string& mpi, const std::string& file);

// "Open MPI" or "MPICH"
std::string mpi_display_name(const std::string& mpi);

}  // namespace mpiadvise::cli
