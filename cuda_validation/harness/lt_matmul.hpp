// One cuBLASLt matmul, planned once and run many times:
//   D = alpha * op(A) * op(B)      (beta = 0; C aliases D and is not read)
// in cuBLASLt's column-major convention, optionally strided-batched. The
// algorithm is the first answer of cublasLtMatmulAlgoGetHeuristic under the
// given workspace limit; algorithm() describes it for the measurement record.
// No algorithm for the combination -> Skip.
#pragma once

#include "harness/check.hpp"

#include <cstdint>
#include <string>

namespace ridgeline::cuda_bench {

struct LtMatmulSpec {
  cublasOperation_t op_a = CUBLAS_OP_T;
  cublasOperation_t op_b = CUBLAS_OP_N;
  std::int64_t m = 0, n = 0, k = 0;  // D is m x n; the inner dimension is k
  std::int64_t lda = 0, ldb = 0, ldd = 0;
  int batch = 1;
  std::int64_t stride_a = 0, stride_b = 0, stride_d = 0;  // elements between batch entries
  cudaDataType_t a_type = CUDA_R_16BF;
  cudaDataType_t b_type = CUDA_R_16BF;
  cudaDataType_t d_type = CUDA_R_16BF;  // C has the same type
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType_t scale_type = CUDA_R_32F;  // alpha is a float
  /// fp8 only: CUBLASLT_MATMUL_DESC_FAST_ACCUM (1 = accumulate in the tensor
  /// cores' narrower format without periodic promotion to fp32; 0 = promote,
  /// cuBLASLt's default). -1 leaves the attribute unset. Recorded in algorithm().
  int fast_accum = -1;
};

class LtMatmul {
 public:
  LtMatmul(cublasLtHandle_t handle, const LtMatmulSpec& spec, std::size_t workspace_bytes);
  ~LtMatmul();
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;

  void run(const void* a, const void* b, void* d, float alpha, void* workspace, cudaStream_t stream) const;
  const std::string& algorithm() const { return algorithm_; }

 private:
  void destroy() noexcept;

  cublasLtHandle_t handle_;
  std::size_t workspace_bytes_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  std::string algorithm_;
};

}  // namespace ridgeline::cuda_bench
