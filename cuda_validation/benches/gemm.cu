// GEMM throughput through cuBLASLt: D (m x n) = A (m x k) . B^T, B stored
// n x k ("TN" in cuBLAS's column-major terms, the layout fp8 requires and
// the one nn.Linear weights have), over transformer-layer shapes in tf32,
// bf16, fp16 (fp32 accumulation for all three) and fp8 E4M3 (bf16 output,
// compute capability >= 8.9 only). The algorithm is cuBLASLt's first
// heuristic answer with a 32 MiB workspace.
//
// FLOP per run 2mnk; bytes (mk + kn) x input size + mn x output size (C is
// not read: beta = 0). Check: 64 sampled outputs against a float64 dot
// product of the same (already rounded) inputs.

#include "benches/bench_util.cuh"
#include "benches/benches.hpp"
#include "harness/lt_matmul.hpp"

#include <cmath>
#include <string>

namespace ridgeline::cuda_bench {

namespace {

struct GemmShape {
  std::int64_t m, n, k;
  bool in_quick;
};

// A Llama-3-8B-sized layer over 8192 tokens (hidden 4096, FFN 14336; QKV as a
// GPT-style fused 3h projection), square sizes, and thin GEMMs (few tokens;
// LoRA rank-16 adapters).
const GemmShape kShapes[] = {
    {8192, 4096, 4096, true},    // attention output projection
    {8192, 12288, 4096, false},  // fused QKV (GPT-style 3h)
    {8192, 14336, 4096, true},   // MLP up / gate
    {8192, 4096, 14336, true},   // MLP down
    {8192, 8192, 8192, false},   {4096, 4096, 4096, true}, {2048, 2048, 2048, true},
    {1024, 1024, 1024, true},    {512, 512, 512, true},
    {128, 4096, 4096, false},    // 128 tokens
    {8192, 16, 4096, true},      // LoRA A: rank 16
    {8192, 4096, 16, false},     // LoRA B: k = rank 16
};

template <typename TA, typename TD>
__global__ void gemm_reference_kernel(const TA* a, const TA* b, const TD* d, const std::int64_t* rows,
                                      const std::int64_t* cols, int count, std::int64_t m, std::int64_t k,
                                      double* want, double* abs_sum, float* got) {
  int sample = blockIdx.x;
  if (sample >= count) return;
  std::int64_t i = rows[sample], j = cols[sample];
  double sum = 0.0, mag = 0.0;
  for (std::int64_t kk = threadIdx.x; kk < k; kk += blockDim.x) {
    double p = static_cast<double>(static_cast<float>(a[i * k + kk])) * static_cast<double>(static_cast<float>(b[j * k + kk]));
    sum += p;
    mag += fabs(p);
  }
  for (int offset = 16; offset > 0; offset /= 2) {
    sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    mag += __shfl_xor_sync(0xffffffffu, mag, offset);
  }
  if (threadIdx.x == 0) {
    want[sample] = sum;
    abs_sum[sample] = mag;
    got[sample] = static_cast<float>(d[i + j * m]);
  }
}

struct DtypeInfo {
  const char* label;
  cudaDataType_t in_type;
  cudaDataType_t out_type;
  cublasComputeType_t compute;
  int in_bytes;
  int out_bytes;
  // Tolerance: acc_eps x sum|a_i b_i| + out_eps x |d|. tf32 rounds fp32 inputs to
  // 10 mantissa bits (<= 2^-11 each, 2^-10 per product); bf16/fp16/fp8 inputs are
  // exact in the reference, leaving fp32 accumulation and output rounding.
  double acc_eps;
  double out_eps;
};

template <typename TA, typename TD>
void gemm_case(Suite& suite, const DtypeInfo& dt, const GemmShape& s) {
  std::string name = std::string("gemm_") + dt.label + "_" + std::to_string(s.m) + "x" + std::to_string(s.n) +
                     "x" + std::to_string(s.k);
  suite.run_case(name, [&] {
    if (std::string(dt.label) == "fp8_e4m3" && suite.device().cc() < 89)
      throw Skip("fp8 E4M3 GEMM needs compute capability >= 8.9; this GPU is " +
                 std::to_string(suite.device().cc_major) + "." + std::to_string(suite.device().cc_minor));
    LtMatmulSpec spec;
    spec.op_a = CUBLAS_OP_T;
    spec.op_b = CUBLAS_OP_N;
    spec.m = s.m;
    spec.n = s.n;
    spec.k = s.k;
    spec.lda = s.k;
    spec.ldb = s.k;
    spec.ldd = s.m;
    spec.a_type = dt.in_type;
    spec.b_type = dt.in_type;
    spec.d_type = dt.out_type;
    spec.compute = dt.compute;
    // fp8: accumulation promoted to fp32 (cuBLASLt's default, and torch._scaled_mm's
    // use_fast_accum=False), set explicitly so the record says which mode ran.
    if (dt.in_type == CUDA_R_8F_E4M3) spec.fast_accum = 0;
    LtMatmul mm(suite.lt_handle(), spec, Suite::kLtWorkspaceBytes);
    void* workspace = suite.lt_workspace();

    std::size_t na = static_cast<std::size_t>(s.m * s.k), nb = static_cast<std::size_t>(s.n * s.k),
                nd = static_cast<std::size_t>(s.m * s.n);
    DeviceBuffer a(na * sizeof(TA)), b(nb * sizeof(TA)), d(nd * sizeof(TD));
    fill_uniform(a.as<TA>(), na, 21, -1.0f, 1.0f, suite.stream());
    fill_uniform(b.as<TA>(), nb, 22, -1.0f, 1.0f, suite.stream());
    auto run = [&](cudaStream_t stream) { mm.run(a.get(), b.get(), d.get(), 1.0f, workspace, stream); };
    Timing timing = suite.time(run);

    // Check 64 sampled outputs (corners included).
    constexpr int kSamples = 64;
    std::vector<std::int64_t> flat = sample_indices(s.m * s.n, kSamples, 3);
    int count = static_cast<int>(flat.size());
    std::vector<std::int64_t> rows(flat.size()), cols(flat.size());
    for (std::size_t i = 0; i < flat.size(); ++i) {
      rows[i] = flat[i] % s.m;
      cols[i] = flat[i] / s.m;
    }
    DeviceBuffer d_rows(rows.size() * 8), d_cols(cols.size() * 8), d_want(rows.size() * 8),
        d_abs(rows.size() * 8), d_got(rows.size() * 4);
    RIDGELINE_CUDA_CHECK(cudaMemcpyAsync(d_rows.get(), rows.data(), d_rows.bytes(), cudaMemcpyHostToDevice, suite.stream()));
    RIDGELINE_CUDA_CHECK(cudaMemcpyAsync(d_cols.get(), cols.data(), d_cols.bytes(), cudaMemcpyHostToDevice, suite.stream()));
    gemm_reference_kernel<TA, TD><<<count, 32, 0, suite.stream()>>>(
        a.as<TA>(), b.as<TA>(), d.as<TD>(), d_rows.as<std::int64_t>(), d_cols.as<std::int64_t>(), count, s.m, s.k,
        d_want.as<double>(), d_abs.as<double>(), d_got.as<float>());
    RIDGELINE_CUDA_CHECK_LAUNCH();
    std::vector<double> want(rows.size()), mag(rows.size());
    std::vector<float> got(rows.size());
    RIDGELINE_CUDA_CHECK(cudaMemcpyAsync(want.data(), d_want.get(), d_want.bytes(), cudaMemcpyDeviceToHost, suite.stream()));
    RIDGELINE_CUDA_CHECK(cudaMemcpyAsync(mag.data(), d_abs.get(), d_abs.bytes(), cudaMemcpyDeviceToHost, suite.stream()));
    RIDGELINE_CUDA_CHECK(cudaMemcpyAsync(got.data(), d_got.get(), d_got.bytes(), cudaMemcpyDeviceToHost, suite.stream()));
    RIDGELINE_CUDA_CHECK(cudaStreamSynchronize(suite.stream()));
    CheckResult check;
    for (std::size_t i = 0; i < rows.size(); ++i)
      check.compare(got[i], want[i], dt.acc_eps * mag[i] + dt.out_eps * std::fabs(want[i]) + 1e-6);

    Record r;
    r.name = name;
    r.cls = spec::MeasurementClass::kGemm;
    r.dtype = dt.label;
    r.m = s.m;
    r.n = s.n;
    r.k = s.k;
    r.batch = 1;
    r.flops = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
    r.bytes = static_cast<double>(na + nb) * dt.in_bytes + static_cast<double>(nd) * dt.out_bytes;
    r.algorithm = mm.algorithm();
    suite.add(r, timing, check);
  });
}

}  // namespace

void run_gemm(Suite& suite) {
  const DtypeInfo tf32{"tf32", CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4, 0x1p-9, 0x1p-20};
  const DtypeInfo bf16{"bf16", CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2, 0x1p-16, 0x1p-7};
  const DtypeInfo fp16{"fp16", CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, 2, 0x1p-16, 0x1p-10};
  // Hopper's fp8 tensor cores accumulate with fewer than 32 bits between promotions.
  const DtypeInfo fp8{"fp8_e4m3", CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1, 2, 0x1p-12, 0x1p-7};
  for (const GemmShape& s : kShapes) {
    if (suite.quick() && !s.in_quick) continue;
    gemm_case<__nv_bfloat16, __nv_bfloat16>(suite, bf16, s);
    gemm_case<__half, __half>(suite, fp16, s);
    gemm_case<float, float>(suite, tf32, s);
    gemm_case<__nv_fp8_e4m3, __nv_bfloat16>(suite, fp8, s);
  }
}

}  // namespace ridgeline::cuda_bench
