// The GPU tier: real device memory through a dlopen'ed CUDA runtime when a GPU is present, else the
// capacity + bandwidth model (tiers.h make_gpu_model_tier). The choice is never silent: the description says
// which one runs.
#pragma once
#include <memory>
#include <string>

#include "workload/serving/tiers/tiers.h"

namespace kvio::serving {

/// Name of CUDA device 0 ("NVIDIA H100 80GB HBM3"), or "" with the reason in `why` (no libcudart, no
/// device, driver error).
std::string cuda_device_name(std::string* why);

/// --gpu-tier: "model" = the bandwidth model at `gbps` × 1e9 B/s; "cuda" = device 0 through libcudart
/// (throws kvio::Error saying why when there is none); "auto" = cuda when a device exists, else the model.
/// `description` gets "model (64 GB/s host<->GPU, no device)" or "cuda (<device name>, cudaMemcpy timed)".
std::unique_ptr<TierBackend> make_gpu_tier(const std::string& mode, double gbps, std::string* description);

}  // namespace kvio::serving
