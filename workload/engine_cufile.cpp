// cufile engine (GPUDirect Storage): built only when the CUDA toolkit and libcufile are present.
// This build has neither, so selecting it fails with a clear message.
#include "common/error.h"
#include "workload/engine.h"

namespace kvio::workload {

std::unique_ptr<Engine> make_cufile_engine(const EngineConfig&) {
    throw Error(
        "engine 'cufile' was not built in: this kvio was built without the CUDA toolkit and libcufile "
        "(use --engine posix, io_uring or uring_cmd)");
}

}  // namespace kvio::workload
