#include "harness/check.hpp"

#include <cstdio>

namespace ridgeline::cuda_bench {

void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "%s:%d: error: %s failed: %s: %s\n", file, line, call, cudaGetErrorName(status),
               cudaGetErrorString(status));
  throw CudaError(std::string(call) + ": " + cudaGetErrorString(status));
}

void check_cublas(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  std::fprintf(stderr, "%s:%d: error: %s failed: %s: %s\n", file, line, call, cublasLtGetStatusName(status),
               cublasLtGetStatusString(status));
  throw CudaError(std::string(call) + ": " + cublasLtGetStatusString(status));
}

}  // namespace ridgeline::cuda_bench
