// Checked CUDA and cuBLASLt calls. Every runtime and cuBLASLt call in the
// suite goes through RIDGELINE_CUDA_CHECK / RIDGELINE_CUBLAS_CHECK: on failure the macro
// prints "file:line: error: CALL failed: NAME: description" to stderr and
// throws CudaError. The runner catches it, abandons the benchmark case, and
// ends the process with exit status 3 once the suite is done (or at once
// when the device is left unusable).
//
// A case that cannot run at all (no fp8 on this GPU, not enough memory for a
// 4 GiB buffer) throws Skip instead: the runner prints the reason and goes on.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <stdexcept>
#include <string>

namespace ridgeline::cuda_bench {

/// A failed CUDA runtime or cuBLASLt call; the message is already printed.
class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A benchmark case that cannot run here; `what()` is the reason.
class Skip : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

void check_cuda(cudaError_t status, const char* call, const char* file, int line);
void check_cublas(cublasStatus_t status, const char* call, const char* file, int line);

}  // namespace ridgeline::cuda_bench

#define RIDGELINE_CUDA_CHECK(call) ::ridgeline::cuda_bench::check_cuda((call), #call, __FILE__, __LINE__)
#define RIDGELINE_CUBLAS_CHECK(call) ::ridgeline::cuda_bench::check_cublas((call), #call, __FILE__, __LINE__)
/// After a kernel launch: reports a bad launch configuration at its call site.
#define RIDGELINE_CUDA_CHECK_LAUNCH() RIDGELINE_CUDA_CHECK(cudaGetLastError())
