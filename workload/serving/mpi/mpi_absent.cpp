// The MPI launcher of a kvio built without Open MPI (mpi_client.h): --mpi is refused with the reason.
#include "common/error.h"
#include "workload/serving/cluster/mpi_client.h"

namespace kvio::serving {

bool mpi_built() { return false; }

const char* mpi_build_status() {
    return "MPI: not built (libopenmpi-dev was not found at build time, or make MPI=0: install it, e.g. bash "
           "scripts/deps.sh, and rebuild): --mpi is refused; --num-clients works";
}

SimResult run_mpi_client(const SimConfig&, std::ostream*, std::ostream*, std::vector<ClientResult>*,
                         const std::function<void(int, bool)>&) {
    throw Error(std::string("simulate: --mpi: ") + mpi_build_status());
}

MpiScope::MpiScope() { throw Error(std::string("simulate: --mpi: ") + mpi_build_status()); }
MpiScope::~MpiScope() = default;

int mpi_max_over_ranks(int) { throw Error(std::string("simulate: --mpi: ") + mpi_build_status()); }

std::vector<std::string> mpi_gather_strings(const std::string&) {
    throw Error(std::string("simulate: --mpi: ") + mpi_build_status());
}

std::string mpi_host_name() { throw Error(std::string("simulate: --mpi: ") + mpi_build_status()); }

}  // namespace kvio::serving
