// Attention forward, non-causal, bf16 Q, K, V, O of shape [batch*heads, seq,
// head_dim], scale 1/sqrt(head_dim):
//   naive: S = Q K^T (cuBLASLt strided-batched bf16 GEMM, bf16 S in HBM),
//          P = softmax(scale S) into a second bf16 buffer (rowwise.cuh), as
//          eager PyTorch does, O = P V (GEMM): 3 launches;
//   cuda_core: one tiled kernel with an online softmax (FlashAttention
//          forward, Dao et al. 2022): a block per (batch*head, 64 queries),
//          64-key tiles of K and V staged in shared memory, fp32 math on CUDA
//          cores (no tensor cores: a plain reference point, not a tuned
//          kernel). Its class, attention_cuda_core, fits nothing: its time
//          says nothing about the tensor-core efficiency of a real
//          FlashAttention, which torch_steps.py measures through SDPA.
//
// FLOP per run (both): 4 x seq^2 x head_dim x batch*heads (the two GEMMs;
// FlashAttention's benchmark convention, non-causal). Bytes per run, bf16:
//   naive 8 x seq x head_dim x bh (Q, K, V read, O written)
//         + 8 x seq^2 x bh (S written, S read and P written by softmax, P read);
//   cuda_core 8 x seq x head_dim x bh.
// Check: four query rows of one head against a float64 host attention, and
// flash against naive on 256 sampled outputs.

#include "benches/benches.hpp"
#include "benches/rowwise.cuh"
#include "harness/lt_matmul.hpp"

#include <cmath>
#include <string>

namespace ridgeline::cuda_bench {

namespace {

constexpr int kBlockQ = 64;   // queries per block
constexpr int kBlockK = 64;   // keys per tile
constexpr int kThreads = 256; // 16 x 16: ty owns 4 queries, tx owns 4 keys and head_dim/16 output columns
constexpr int kPStride = kBlockK + 4;  // floats per row of P (padding keeps float4 alignment)
constexpr int kBatchHeads = 16;

template <int kD>
constexpr std::size_t flash_smem_bytes() {
  return kD * kBlockQ * sizeof(float)              // Q^T, fp32
         + kD * kBlockK * sizeof(std::uint16_t)    // K^T, bf16
         + kBlockK * kD * sizeof(std::uint16_t)    // V, bf16
         + kBlockK * kPStride * sizeof(float);     // P, fp32
}

__device__ inline float bf16_lo(std::uint32_t w) { return __uint_as_float(w << 16); }
__device__ inline float bf16_hi(std::uint32_t w) { return __uint_as_float(w & 0xffff0000u); }

template <int kD>
__global__ void __launch_bounds__(kThreads)
    flash_forward_kernel(const __nv_bfloat16* __restrict__ q, const __nv_bfloat16* __restrict__ k,
                         const __nv_bfloat16* __restrict__ v, __nv_bfloat16* __restrict__ o, int seq,
                         float scale_log2) {
  constexpr int kChunks = kD / 8;  // 16-byte chunks per row
  constexpr int kCols = kD / 16;   // output columns per thread
  extern __shared__ __align__(16) unsigned char smem[];
  float* qt = reinterpret_cast<float*>(smem);                                  // [kD][kBlockQ]
  std::uint16_t* kt = reinterpret_cast<std::uint16_t*>(qt + kD * kBlockQ);     // [kD][kBlockK]
  std::uint16_t* vs = kt + kD * kBlockK;                                       // [kBlockK][kD]
  float* ps = reinterpret_cast<float*>(vs + kBlockK * kD);                     // [kBlockK][kPStride]

  const int tid = threadIdx.x, tx = tid % 16, ty = tid / 16;
  const int q0 = blockIdx.x * kBlockQ;
  const std::size_t head = static_cast<std::size_t>(blockIdx.y) * seq * kD;
  const __nv_bfloat16* qh = q + head;
  const __nv_bfloat16* kh = k + head;
  const __nv_bfloat16* vh = v + head;

  // Q tile, transposed to qt[c][query]; query-fastest threads make the stores conflict-free.
  for (int i = tid; i < kBlockQ * kChunks; i += kThreads) {
    int row = i % kBlockQ, chunk = i / kBlockQ;
    float f[8];
    unpack_bf16x8(*reinterpret_cast<const uint4*>(qh + static_cast<std::size_t>(q0 + row) * kD + chunk * 8), f);
#pragma unroll
    for (int e = 0; e < 8; ++e) qt[(chunk * 8 + e) * kBlockQ + row] = f[e];
  }

  float m[4], l[4], acc[4][kCols];
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.0f;
#pragma unroll
    for (int c = 0; c < kCols; ++c) acc[i][c] = 0.0f;
  }

  for (int k0 = 0; k0 < seq; k0 += kBlockK) {
    __syncthreads();  // the previous tile's readers are done
    for (int i = tid; i < kBlockK * kChunks; i += kThreads) {
      int row = i % kBlockK, chunk = i / kBlockK;
      uint4 raw = *reinterpret_cast<const uint4*>(kh + static_cast<std::size_t>(k0 + row) * kD + chunk * 8);
      const std::uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        kt[(chunk * 8 + 2 * e) * kBlockK + row] = static_cast<std::uint16_t>(w[e] & 0xffffu);
        kt[(chunk * 8 + 2 * e + 1) * kBlockK + row] = static_cast<std::uint16_t>(w[e] >> 16);
      }
    }
    for (int i = tid; i < kBlockK * kChunks; i += kThreads) {
      int row = i / kChunks, chunk = i % kChunks;
      *reinterpret_cast<uint4*>(vs + row * kD + chunk * 8) =
          *reinterpret_cast<const uint4*>(vh + static_cast<std::size_t>(k0 + row) * kD + chunk * 8);
    }
    __syncthreads();

    // S tile: this thread's 4 queries (ty*4 + i) x 4 keys (tx*4 + j).
    float s[4][4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) s[i][j] = 0.0f;
#pragma unroll 8
    for (int c = 0; c < kD; ++c) {
      float4 qv = *reinterpret_cast<const float4*>(qt + c * kBlockQ + ty * 4);
      uint2 kr = *reinterpret_cast<const uint2*>(kt + c * kBlockK + tx * 4);
      const float qf[4] = {qv.x, qv.y, qv.z, qv.w};
      const float kf[4] = {bf16_lo(kr.x), bf16_hi(kr.x), bf16_lo(kr.y), bf16_hi(kr.y)};
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) s[i][j] = fmaf(qf[i], kf[j], s[i][j]);
    }

    // Online softmax (base 2): a row's 64 scores live in 16 lanes of one warp.
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      float mx = -INFINITY;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        s[i][j] *= scale_log2;
        mx = fmaxf(mx, s[i][j]);
      }
#pragma unroll
      for (int offset = 8; offset > 0; offset /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, offset));
      float m_new = fmaxf(m[i], mx);
      float alpha = exp2f(m[i] - m_new);
      float sum = 0.0f;
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        s[i][j] = exp2f(s[i][j] - m_new);
        sum += s[i][j];
      }
#pragma unroll
      for (int offset = 8; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
      l[i] = l[i] * alpha + sum;
      m[i] = m_new;
#pragma unroll
      for (int c = 0; c < kCols; ++c) acc[i][c] *= alpha;
    }
#pragma unroll
    for (int j = 0; j < 4; ++j)
      *reinterpret_cast<float4*>(ps + (tx * 4 + j) * kPStride + ty * 4) = make_float4(s[0][j], s[1][j], s[2][j], s[3][j]);
    __syncthreads();

    // O += P V: this thread's 4 queries x kCols columns (tx * kCols + c).
#pragma unroll 4
    for (int key = 0; key < kBlockK; ++key) {
      float4 pv = *reinterpret_cast<const float4*>(ps + key * kPStride + ty * 4);
      const float p[4] = {pv.x, pv.y, pv.z, pv.w};
      float vf[kCols];
      const std::uint16_t* vrow = vs + key * kD + tx * kCols;
      if constexpr (kCols == 8) {
        unpack_bf16x8(*reinterpret_cast<const uint4*>(vrow), vf);
      } else {
        static_assert(kCols == 4, "head_dim 64 or 128");
        uint2 r = *reinterpret_cast<const uint2*>(vrow);
        vf[0] = bf16_lo(r.x);
        vf[1] = bf16_hi(r.x);
        vf[2] = bf16_lo(r.y);
        vf[3] = bf16_hi(r.y);
      }
#pragma unroll
      for (int i = 0; i < 4; ++i)
#pragma unroll
        for (int c = 0; c < kCols; ++c) acc[i][c] = fmaf(p[i], vf[c], acc[i][c]);
    }
  }

#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const float inv = 1.0f / l[i];
    __nv_bfloat16* orow = o + head + static_cast<std::size_t>(q0 + ty * 4 + i) * kD + tx * kCols;
    float out[kCols];
#pragma unroll
    for (int c = 0; c < kCols; ++c) out[c] = acc[i][c] * inv;
    if constexpr (kCols == 8) {
      *reinterpret_cast<uint4*>(orow) = pack_bf16x8(out);
    } else {
      *reinterpret_cast<uint2*>(orow) = make_uint2(pack_bf16x2(out[0], out[1]), pack_bf16x2(out[2], out[3]));
    }
  }
}

template <int kD>
void launch_flash(const void* q, const void* k, const void* v, void* o, int seq, int bh, float scale,
                  cudaStream_t stream) {
  dim3 grid(static_cast<unsigned>(seq / kBlockQ), static_cast<unsigned>(bh));
  flash_forward_kernel<kD><<<grid, kThreads, flash_smem_bytes<kD>(), stream>>>(
      static_cast<const __nv_bfloat16*>(q), static_cast<const __nv_bfloat16*>(k),
      static_cast<const __nv_bfloat16*>(v), static_cast<__nv_bfloat16*>(o), seq, scale * 1.4426950408889634f);
  RIDGELINE_CUDA_CHECK_LAUNCH();
}

/// float64 attention for query `row` of one head; q, k, v are that head's [seq, d] matrices.
std::vector<double> host_attention_row(const std::vector<float>& qrow, const std::vector<float>& k,
                                       const std::vector<float>& v, int seq, int d) {
  std::vector<double> score(static_cast<std::size_t>(seq));
  double mx = -INFINITY;
  for (int j = 0; j < seq; ++j) {
    double dot = 0.0;
    for (int c = 0; c < d; ++c) dot += static_cast<double>(qrow[c]) * k[static_cast<std::size_t>(j) * d + c];
    score[j] = dot / std::sqrt(static_cast<double>(d));
    mx = std::fmax(mx, score[j]);
  }
  double sum = 0.0;
  for (double& x : score) {
    x = std::exp(x - mx);
    sum += x;
  }
  std::vector<double> out(static_cast<std::size_t>(d), 0.0);
  for (int j = 0; j < seq; ++j)
    for (int c = 0; c < d; ++c) out[c] += score[j] / sum * v[static_cast<std::size_t>(j) * d + c];
  return out;
}

void attention_case(Suite& suite, int seq, int d) {
  const int bh = kBatchHeads;
  std::string label = "bf16_s" + std::to_string(seq) + "_d" + std::to_string(d) + "_bh" + std::to_string(bh);
  suite.run_case("attention_" + label, [&] {
    bool want_naive = suite.wants(spec::MeasurementClass::kAttentionNaive);
    bool want_flash = suite.wants(spec::MeasurementClass::kAttentionCudaCore);
    std::size_t qkv = static_cast<std::size_t>(bh) * seq * d;
    std::size_t scores = static_cast<std::size_t>(bh) * seq * seq;
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    DeviceBuffer q(qkv * 2), k(qkv * 2), v(qkv * 2), o_flash(qkv * 2), o_naive(qkv * 2);
    // |q.k| / sqrt(d) has a standard deviation near 4/3: the softmax is neither flat nor one-hot.
    fill_uniform(q.as<__nv_bfloat16>(), qkv, 61, -2.0f, 2.0f, suite.stream());
    fill_uniform(k.as<__nv_bfloat16>(), qkv, 62, -2.0f, 2.0f, suite.stream());
    fill_uniform(v.as<__nv_bfloat16>(), qkv, 63, -1.0f, 1.0f, suite.stream());

    // Host reference rows of head bh/2.
    const int ref_head = bh / 2;
    const std::size_t head_offset = static_cast<std::size_t>(ref_head) * seq * d;
    std::vector<std::int64_t> ref_rows = sample_indices(seq, 4, 7);
    std::vector<float> hk = gather_to_host(
        k.as<__nv_bfloat16>(), index_range(static_cast<std::int64_t>(head_offset), std::int64_t{seq} * d), suite.stream());
    std::vector<float> hv = gather_to_host(
        v.as<__nv_bfloat16>(), index_range(static_cast<std::int64_t>(head_offset), std::int64_t{seq} * d), suite.stream());
    auto check_rows = [&](const DeviceBuffer& out, double rel, double abs) {
      CheckResult check;
      for (std::int64_t row : ref_rows) {
        std::int64_t first = static_cast<std::int64_t>(head_offset) + row * d;
        std::vector<float> qrow = gather_to_host(q.as<__nv_bfloat16>(), index_range(first, d), suite.stream());
        std::vector<float> got = gather_to_host(out.as<__nv_bfloat16>(), index_range(first, d), suite.stream());
        std::vector<double> want = host_attention_row(qrow, hk, hv, seq, d);
        for (int c = 0; c < d; ++c) check.compare(got[c], want[c], rel * std::fabs(want[c]) + abs);
      }
      return check;
    };

    double bhd = static_cast<double>(bh), sd = static_cast<double>(seq);
    Record base;
    base.dtype = "bf16";
    base.m = seq;
    base.n = d;
    base.k = seq;
    base.batch = bh;
    base.flops = 4.0 * sd * sd * d * bhd;

    CheckResult naive_check;
    bool naive_ran = false;
    if (want_naive || want_flash) {
      // Naive: S^T (keys x queries, column-major) = K Q^T is S row-major; then O^T = V^T P^T.
      LtMatmulSpec qk;
      qk.op_a = CUBLAS_OP_T;
      qk.op_b = CUBLAS_OP_N;
      qk.m = seq;
      qk.n = seq;
      qk.k = d;
      qk.lda = d;
      qk.ldb = d;
      qk.ldd = seq;
      qk.batch = bh;
      qk.stride_a = qk.stride_b = static_cast<std::int64_t>(seq) * d;
      qk.stride_d = static_cast<std::int64_t>(seq) * seq;
      LtMatmulSpec pv;
      pv.op_a = CUBLAS_OP_N;
      pv.op_b = CUBLAS_OP_N;
      pv.m = d;
      pv.n = seq;
      pv.k = seq;
      pv.lda = d;
      pv.ldb = seq;
      pv.ldd = d;
      pv.batch = bh;
      pv.stride_a = static_cast<std::int64_t>(seq) * d;
      pv.stride_b = static_cast<std::int64_t>(seq) * seq;
      pv.stride_d = static_cast<std::int64_t>(seq) * d;
      try {
        LtMatmul mm_qk(suite.lt_handle(), qk, Suite::kLtWorkspaceBytes);
        LtMatmul mm_pv(suite.lt_handle(), pv, Suite::kLtWorkspaceBytes);
        void* workspace = suite.lt_workspace();
        DeviceBuffer s(scores * 2), p(scores * 2);
        auto naive = [&](cudaStream_t stream) {
          mm_qk.run(k.get(), q.get(), s.get(), 1.0f, workspace, stream);
          if (!launch_softmax(s.get(), p.get(), static_cast<std::int64_t>(bh) * seq, seq, scale, stream))
            throw Skip("softmax kernel has no configuration for " + std::to_string(seq) + " columns");
          RIDGELINE_CUDA_CHECK_LAUNCH();
          mm_pv.run(v.get(), p.get(), o_naive.get(), 1.0f, workspace, stream);
        };
        if (want_naive) {
          Timing t = suite.time(naive);
          naive_check = check_rows(o_naive, 0x1p-5, 0x1p-8);  // bf16 S and P add ~2^-8 relative error
          Record r = base;
          r.name = "attention_naive_" + label;
          r.cls = spec::MeasurementClass::kAttentionNaive;
          r.bytes = 8.0 * sd * d * bhd + 8.0 * sd * sd * bhd;
          r.launches = 3;
          r.algorithm = "QK^T: " + mm_qk.algorithm() + "; softmax: " + row_config_label(seq) +
                        "; PV: " + mm_pv.algorithm() + "; non-causal";
          suite.add(r, t, naive_check);
        } else {
          naive(suite.stream());  // one run, as the flash check's second opinion
        }
        RIDGELINE_CUDA_CHECK(cudaStreamSynchronize(suite.stream()));
        naive_ran = true;
      } catch (const Skip& e) {
        suite.skip("attention_naive_" + label, e.what());
      }
    }

    if (want_flash) {
      std::size_t smem = d == 64 ? flash_smem_bytes<64>() : flash_smem_bytes<128>();
      if (smem > suite.device().max_smem_per_block_optin_bytes)
        throw Skip("flash kernel needs " + std::to_string(smem) + " bytes of shared memory per block");
      if (d == 64)
        RIDGELINE_CUDA_CHECK(cudaFuncSetAttribute(flash_forward_kernel<64>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(smem)));
      else
        RIDGELINE_CUDA_CHECK(cudaFuncSetAttribute(flash_forward_kernel<128>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           static_cast<int>(smem)));
      auto flash = [&](cudaStream_t stream) {
        if (d == 64)
          launch_flash<64>(q.get(), k.get(), v.get(), o_flash.get(), seq, bh, scale, stream);
        else
          launch_flash<128>(q.get(), k.get(), v.get(), o_flash.get(), seq, bh, scale, stream);
      };
      Timing t = suite.time(flash);
      CheckResult check = check_rows(o_flash, 0x1p-7, 0x1p-10);  // fp32 math, one bf16 rounding
      if (naive_ran) {
        std::vector<std::int64_t> idx = sample_indices(static_cast<std::int64_t>(qkv), 256, 8);
        std::vector<float> of = gather_to_host(o_flash.as<__nv_bfloat16>(), idx, suite.stream());
        std::vector<float> on = gather_to_host(o_naive.as<__nv_bfloat16>(), idx, suite.stream());
        for (std::size_t i = 0; i < idx.size(); ++i) check.compare(of[i], on[i], 0x1p-5 * std::fabs(on[i]) + 0x1p-8);
      }
      Record r = base;
      r.name = "attention_cuda_core_" + label;
      r.cls = spec::MeasurementClass::kAttentionCudaCore;
      r.bytes = 8.0 * sd * d * bhd;
      r.launches = 1;
      r.algorithm = "tiled online softmax, fp32 CUDA cores, Br=" + std::to_string(kBlockQ) +
                    " Bc=" + std::to_string(kBlockK) + " threads=" + std::to_string(kThreads) +
                    " smem=" + std::to_string(smem) + "; non-causal";
      suite.add(r, t, check);
    }
  });
}

}  // namespace

void run_attention(Suite& suite) {
  const int max_seq = suite.quick() ? 4096 : 8192;
  for (int d : {64, 128})
    for (int seq = 512; seq <= max_seq; seq *= 2) attention_case(suite, seq, d);
}

}  // namespace ridgeline::cuda_bench
