// `kvio simulate --num-clients N`: N client processes on one host, like the benchmark's mlperf_wrapper.py
// (docs/mlperf-benchmark.md, "Multi-client runs": each its own cache subdirectory, seed base + rank, its own results
// file), and one merged result (merge_results.h). The per-client helpers here are shared with the MPI launcher
// (mpi_client.h).
#pragma once
#include <functional>
#include <iosfwd>
#include <string>

#include "workload/serving/config.h"
#include "workload/serving/results/merge_results.h"
#include "workload/serving/simulate.h"

namespace kvio::serving {

/// Client `rank`'s config: --cache-dir <dir>/rank_<rank> ("" stays "": each client makes its own temporary
/// directory), --seed base + rank (unset stays unset: each client draws its own), --output
/// client_output_path(output, rank), no console report, num_clients 1, mpi off; client_count = `clients`.
SimConfig client_config(const SimConfig& c, int rank, int clients);

/// What many clients cannot share, refused before any client starts (kvio::Error naming `launcher_flag`): a raw
/// block device as --cache-dir (one device cannot take a subdirectory per client), --enable-latency-tracing
/// (every client's tracer would see every client's I/O) and --io-trace-log (one CSV per run). Also checks that
/// --output can be written.
void check_multi_client(const SimConfig& c, const char* launcher_flag);

/// With the automatic storage limit (--storage-capacity-gb 0), gives each of the `clients_on_host` clients that
/// share this host's filesystem 1/N of it (95 % of the free space of --cache-dir, or of its nearest existing
/// parent) instead of all of it; leaves an explicit limit alone.
void share_storage_capacity(SimConfig& c, int clients_on_host);

/// Writes `merged` to c.output (or the default name) and, with a console, prints the benchmark's report of it and
/// the per-client and MLCommons aggregation lines. Returns the path written. Throws kvio::Error when the file
/// cannot be written.
std::string write_merged_result(const SimConfig& c, const nlohmann::ordered_json& merged, std::ostream* console);

/// The refusal of a run started by an MPI launcher without --mpi, "" when not so started. `env` reads an environment
/// variable (nullptr when unset; ::getenv in kvio). A launcher's ranks are recognised by what it exports to each:
/// Open MPI OMPI_COMM_WORLD_SIZE / OMPI_COMM_WORLD_RANK, MPICH and Intel MPI (Hydra) PMI_SIZE / PMI_RANK, PMIx
/// PMIX_RANK (docs/simulate.md, "Many clients"). More than one rank, or a rank above 0, means several copies of
/// this command run at once: each would run its own simulation on the same cache directory and results file,
/// deleting the others' entries, so they are refused with the fix (--mpi). One rank alone runs as usual.
std::string mpi_launch_without_mpi(const std::function<const char*(const char*)>& env);

/// This process's rank as its MPI launcher exported it (the variables mpi_launch_without_mpi reads:
/// OMPI_COMM_WORLD_RANK, PMI_RANK, PMIX_RANK, the first set and numeric), -1 when none is. Every rank parses the same
/// command line, so a command-line error is said by rank 0 alone (cli/main.cpp).
long mpi_rank_from_env(const std::function<const char*(const char*)>& env);

/// The refusal of --mpi in a process no MPI launcher started (none of the variables mpi_launch_without_mpi reads is
/// set), "" when one did: MPI would run it as a singleton, one rank, and a CLOSED run would be the full protocol as
/// one client where N were meant.
std::string mpi_flag_without_launcher(const std::function<const char*(const char*)>& env);

/// Runs c.num_clients clients as child processes (fork, each calls run_simulation with its client_config and
/// SimHooks::keep_merge_state), started together (a pipe barrier right before each client's clock starts), then
/// merges their results files into c.output. SIGINT/SIGTERM/SIGHUP to this process are forwarded to every client
/// (repeated until it exits), each client writes what it measured, and the merged result is still written; the
/// exit code is then 130/143/129. A client that fails is named on stderr and in kvio.merged.failed_ranks
/// (exit code 1). `progress` gets every client's progress lines prefixed "client <rank>: ".
SimResult run_clients(const SimConfig& c, std::ostream* console, std::ostream* progress);

}  // namespace kvio::serving
