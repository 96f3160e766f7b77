#include "harness/lt_matmul.hpp"

#include <cstdio>

namespace ridgeline::cuda_bench {

namespace {

// cublasLtMatmulTile_t names for the ids below 36 (cublasLt.h); higher ids print as numbers.
const char* tile_name(std::uint32_t id) {
  static const char* const kNames[] = {
      "undefined", "8x8",     "8x16",    "16x8",    "8x32",    "16x16",   "32x8",    "8x64",   "16x32",
      "32x16",     "64x8",    "32x32",   "32x64",   "64x32",   "32x128",  "64x64",   "128x32", "64x128",
      "128x64",    "64x256",  "128x128", "256x64",  "64x512",  "128x256", "256x128", "512x64", "64x96",
      "96x64",     "96x128",  "128x160", "160x128", "192x128", "128x192", "128x96",  "32x256", "256x32"};
  return id < sizeof kNames / sizeof kNames[0] ? kNames[id] : nullptr;
}

template <typename T>
bool algo_config(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr, T* out) {
  std::size_t written = 0;
  return cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, out, sizeof(T), &written) == CUBLAS_STATUS_SUCCESS &&
         written == sizeof(T);
}

std::string describe_algo(const cublasLtMatmulAlgo_t& algo) {
  std::int32_t id = 0;
  std::uint32_t tile = 0, stages = 0, swizzle = 0, custom = 0;
  std::int32_t splitk = 1;
  std::uint16_t cluster = 0;
  if (!algo_config(algo, CUBLASLT_ALGO_CONFIG_ID, &id)) return "heuristic#0";
  std::string s = "algo=" + std::to_string(id);
  if (algo_config(algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile)) {
    const char* name = tile_name(tile);
    s += " tile=" + (name != nullptr ? std::string(name) : "#" + std::to_string(tile));
  }
  if (algo_config(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages)) s += " stages=#" + std::to_string(stages);
  if (algo_config(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk)) s += " splitk=" + std::to_string(splitk);
  if (algo_config(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swizzle)) s += " swizzle=" + std::to_string(swizzle);
  if (algo_config(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom)) s += " custom=" + std::to_string(custom);
  if (algo_config(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, &cluster)) s += " cluster=#" + std::to_string(cluster);
  return s;
}

cublasLtMatrixLayout_t make_layout(cudaDataType_t type, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                                   int batch, std::int64_t stride) {
  cublasLtMatrixLayout_t layout = nullptr;
  RIDGELINE_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&layout, type, static_cast<std::uint64_t>(rows),
                                             static_cast<std::uint64_t>(cols), ld));
  if (batch > 1) {
    std::int32_t count = batch;
    RIDGELINE_CUBLAS_CHECK(
        cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
    RIDGELINE_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                     sizeof stride));
  }
  return layout;
}

}  // namespace

LtMatmul::LtMatmul(cublasLtHandle_t handle, const LtMatmulSpec& spec, std::size_t workspace_bytes)
    : handle_(handle), workspace_bytes_(workspace_bytes) {
  // Stored shapes: op(X) = X when N, X^T when T, so the stored matrix is transposed for T.
  bool ta = spec.op_a == CUBLAS_OP_T;
  bool tb = spec.op_b == CUBLAS_OP_T;
  RIDGELINE_CUBLAS_CHECK(cublasLtMatmulDescCreate(&op_, spec.compute, spec.scale_type));
  try {
    RIDGELINE_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &spec.op_a, sizeof spec.op_a));
    RIDGELINE_CUBLAS_CHECK(
        cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &spec.op_b, sizeof spec.op_b));
    if (spec.fast_accum >= 0) {
      const std::int8_t fast = static_cast<std::int8_t>(spec.fast_accum);
      RIDGELINE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast, sizeof fast));
    }
    a_ = make_layout(spec.a_type, ta ? spec.k : spec.m, ta ? spec.m : spec.k, spec.lda, spec.batch, spec.stride_a);
    b_ = make_layout(spec.b_type, tb ? spec.n : spec.k, tb ? spec.k : spec.n, spec.ldb, spec.batch, spec.stride_b);
    d_ = make_layout(spec.d_type, spec.m, spec.n, spec.ldd, spec.batch, spec.stride_d);

    cublasLtMatmulPreference_t pref = nullptr;
    RIDGELINE_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    cublasLtMatmulHeuristicResult_t result{};
    int found = 0;
    cublasStatus_t status = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                                 &workspace_bytes_, sizeof workspace_bytes_);
    if (status == CUBLAS_STATUS_SUCCESS)
      status = cublasLtMatmulAlgoGetHeuristic(handle_, op_, a_, b_, d_, d_, pref, 1, &result, &found);
    (void)cublasLtMatmulPreferenceDestroy(pref);
    if (status == CUBLAS_STATUS_NOT_SUPPORTED || (status == CUBLAS_STATUS_SUCCESS && found == 0))
      throw Skip("cuBLASLt has no algorithm for this type/layout combination on this GPU");
    RIDGELINE_CUBLAS_CHECK(status);
    algo_ = result.algo;
    algorithm_ = describe_algo(algo_) + " ws=" + std::to_string(result.workspaceSize);
    if (spec.fast_accum >= 0) algorithm_ += " fast_accum=" + std::to_string(spec.fast_accum);
  } catch (...) {
    destroy();
    throw;
  }
}

LtMatmul::~LtMatmul() { destroy(); }

void LtMatmul::destroy() noexcept {
  if (d_ != nullptr) (void)cublasLtMatrixLayoutDestroy(d_);
  if (b_ != nullptr) (void)cublasLtMatrixLayoutDestroy(b_);
  if (a_ != nullptr) (void)cublasLtMatrixLayoutDestroy(a_);
  if (op_ != nullptr) (void)cublasLtMatmulDescDestroy(op_);
  d_ = b_ = a_ = nullptr;
  op_ = nullptr;
}

void LtMatmul::run(const void* a, const void* b, void* d, float alpha, void* workspace, cudaStream_t stream) const {
  float beta = 0.0f;
  RIDGELINE_CUBLAS_CHECK(cublasLtMatmul(handle_, op_, &alpha, a, a_, b, b_, &beta, d, d_, d, d_, &algo_, workspace,
                                 workspace_bytes_, stream));
}

}  // namespace ridgeline::cuda_bench
