// `kvio simulate --mpi`: one client per rank of an mpirun job (docs/mlperf-benchmark.md, "Multi-client runs";
// mlperf_wrapper.py's scale-out model: the MLPerf Storage rules' "a client is one MPI process"), with no shared
// filesystem: rank 0 gathers every rank's results over MPI and writes the merged result (merge_results.h). Implemented
// in workload/serving/mpi/ and built only when the Makefile finds Open MPI (pkg-config ompi, or mpicxx --showme);
// otherwise --mpi is refused with mpi_build_status().
#pragma once
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "workload/serving/config.h"
#include "workload/serving/results/merge_results.h"
#include "workload/serving/simulate.h"

namespace kvio::serving {

/// True when this kvio was built with MPI.
bool mpi_built();
/// One line for `kvio simulate --help` and errors: "MPI: built with <library version> (--mpi available)" or
/// "MPI: not built (libopenmpi-dev was not found at build time, or make MPI=0: ...): --mpi is refused; --num-clients
/// works".
const char* mpi_build_status();

/// Runs this process as one rank: MPI_Init (MPI_THREAD_FUNNELED), rank and size from MPI_Comm_rank/_size,
/// client_config(c, rank) (cache <dir>/rank_<r>, seed base + r, <output>.rank<r>.json written on the rank's own
/// host), an MPI_Barrier right before the clock starts (SimHooks::before_start), then MPI_Gatherv of every rank's
/// results document (CBOR) to rank 0, which merges them (launcher "mpi", ranks named by MPI_Get_processor_name)
/// into c.output and, with a console, prints the report. A rank that fails still joins the barrier and the
/// gather with its error (kvio.merged.partial_failure). Returns rank 0's merged result (other ranks: their own).
/// With `gathered`, rank 0 also gets every rank's result in rank order (their documents with kvio.merge_state; other
/// ranks get theirs alone). `on_stop`, when set, is called once on the main loop's thread the moment this rank's run
/// sees a stop (its own signal: `own` true; or one relayed from another rank), before the in-flight requests drain and
/// before any collective step: what must be on disk before a launcher that forwarded the signal kills the rank
/// (docs/mlperf-benchmark.md, "Stopping an MPI run"). Throws kvio::Error when not built with MPI.
SimResult run_mpi_client(const SimConfig& c, std::ostream* console, std::ostream* progress,
                         std::vector<ClientResult>* gathered = nullptr,
                         const std::function<void(int signo, bool own)>& on_stop = {});

/// Keeps MPI initialised across several run_mpi_client calls (a CLOSED run's trials: MPI may be initialised once per
/// process): MPI_Init_thread at construction unless already initialised, MPI_Finalize at destruction when it
/// initialised. Throws kvio::Error when not built with MPI.
class MpiScope {
public:
    MpiScope();
    ~MpiScope();
    MpiScope(const MpiScope&) = delete;
    MpiScope& operator=(const MpiScope&) = delete;
    int rank() const { return rank_; }  ///< MPI_Comm_rank of MPI_COMM_WORLD
    int size() const { return size_; }  ///< MPI_Comm_size of MPI_COMM_WORLD

private:
    bool owned_ = false;
    int rank_ = 0, size_ = 1;
};

/// MPI_Allreduce(MPI_MAX) of `v` over MPI_COMM_WORLD: the value every rank agrees on (a refusal, a stop signal, an
/// exit code), and a barrier. Throws kvio::Error when not built with MPI.
int mpi_max_over_ranks(int v);

/// Every rank's `mine`, in rank order (MPI_Allgather of the lengths, then MPI_Allgatherv of the bytes over
/// MPI_COMM_WORLD): what each rank must know of every other, e.g. the identity of its cache filesystem. Every rank must
/// call it. Throws kvio::Error when not built with MPI.
std::vector<std::string> mpi_gather_strings(const std::string& mine);

/// This rank's host as MPI names it (MPI_Get_processor_name): the name run_mpi_client records for the rank. Throws
/// kvio::Error when not built with MPI.
std::string mpi_host_name();

}  // namespace kvio::serving
