// Attention forward, non-causal, fp32: naive (Eigen S = Q K^T, row softmax,
// Eigen O = P V, per head; S goes through memory) and flash (tiled online
// softmax, S never reaches memory). FLOP = the two GEMMs, 4 s^2 d per head
// (FlashAttention's convention).
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <memory>
#include <vector>

#include "benches/benches.hpp"
#include "benches/rowwise.hpp"
#include "harness/random.hpp"
#include "harness/suite.hpp"
#include "harness/timer.hpp"

namespace ridgeline::host_bench {

namespace {

using RowMat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

/// Naive: S = Q K^T (Eigen), P = softmax(scale S) row by row, O = P V (Eigen).
void attention_naive(const float* q, const float* k, const float* v, float* o, float* s, int bh, int seq, int d,
                     float scale) {
  const size_t head = static_cast<size_t>(seq) * d;
  for (int h = 0; h < bh; ++h) {
    Eigen::Map<const RowMat> Q(q + h * head, seq, d), K(k + h * head, seq, d), V(v + h * head, seq, d);
    Eigen::Map<RowMat> S(s, seq, seq), O(o + h * head, seq, d);
    S.noalias() = Q * K.transpose();
    softmax_rows(s, s, static_cast<size_t>(seq), static_cast<size_t>(seq), scale);
    O.noalias() = S * V;
  }
}

constexpr int kBlockQ = 64;
constexpr int kBlockK = 64;

/// Tiled attention with an online softmax (FlashAttention forward, Dao et al.
/// 2022), plain C++: per block of kBlockQ queries, keys and values stream
/// through in tiles of kBlockK; running max m, running sum l and the output
/// accumulator are rescaled as each tile arrives; S never reaches memory.
void attention_flash(const float* q, const float* k, const float* v, float* o, int bh, int seq, int d, float scale) {
  const size_t head = static_cast<size_t>(seq) * d;
  std::vector<float> kt(static_cast<size_t>(d) * kBlockK), sc(kBlockK), acc(static_cast<size_t>(kBlockQ) * d);
  float m_run[kBlockQ], l_run[kBlockQ];
  for (int h = 0; h < bh; ++h) {
    const float* Q = q + h * head;
    const float* K = k + h * head;
    const float* V = v + h * head;
    float* O = o + h * head;
    for (int q0 = 0; q0 < seq; q0 += kBlockQ) {
      const int rows = std::min(kBlockQ, seq - q0);
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int i = 0; i < rows; ++i) {
        m_run[i] = -std::numeric_limits<float>::infinity();
        l_run[i] = 0;
      }
      for (int k0 = 0; k0 < seq; k0 += kBlockK) {
        const int cols = std::min(kBlockK, seq - k0);
        for (int j = 0; j < cols; ++j)
          for (int c = 0; c < d; ++c) kt[static_cast<size_t>(c) * kBlockK + j] = K[static_cast<size_t>(k0 + j) * d + c];
        for (int i = 0; i < rows; ++i) {
          const float* qi = Q + static_cast<size_t>(q0 + i) * d;
          float* s = sc.data();
          for (int j = 0; j < cols; ++j) s[j] = 0;
          for (int c = 0; c < d; ++c) {
            const float qv = qi[c] * scale;
            const float* kr = kt.data() + static_cast<size_t>(c) * kBlockK;
            for (int j = 0; j < cols; ++j) s[j] += qv * kr[j];
          }
          float m_new = m_run[i];
          for (int j = 0; j < cols; ++j) m_new = std::max(m_new, s[j]);
          const float corr = std::exp(m_run[i] - m_new);
          float sum = 0;
          for (int j = 0; j < cols; ++j) {
            s[j] = std::exp(s[j] - m_new);
            sum += s[j];
          }
          l_run[i] = l_run[i] * corr + sum;
          m_run[i] = m_new;
          float* a = acc.data() + static_cast<size_t>(i) * d;
          for (int c = 0; c < d; ++c) a[c] *= corr;
          for (int j = 0; j < cols; ++j) {
            const float p = s[j];
            const float* vr = V + static_cast<size_t>(k0 + j) * d;
            for (int c = 0; c < d; ++c) a[c] += p * vr[c];
          }
        }
      }
      for (int i = 0; i < rows; ++i) {
        const float inv = 1.0f / l_run[i];
        const float* a = acc.data() + static_cast<size_t>(i) * d;
        float* oi = O + static_cast<size_t>(q0 + i) * d;
        for (int c = 0; c < d; ++c) oi[c] = a[c] * inv;
      }
    }
  }
}

void attention_cases(std::vector<Case>& cases, bool naive, bool flash, int bh, int seq, int d) {
  const size_t qkv = static_cast<size_t>(bh) * seq * d;
  struct Data {
    std::vector<float> q, k, v, o_naive, o_flash, s;
  };
  auto dp = std::make_shared<Data>(Data{std::vector<float>(qkv), std::vector<float>(qkv), std::vector<float>(qkv),
                                        std::vector<float>(qkv, 0.f), std::vector<float>(qkv, 0.f),
                                        std::vector<float>(static_cast<size_t>(seq) * seq)});
  // |q.k| / sqrt(d) has a standard deviation near 4/3: the softmax is neither flat nor one-hot.
  fill_uniform(dp->q.data(), qkv, 51, -2, 2);
  fill_uniform(dp->k.data(), qkv, 52, -2, 2);
  fill_uniform(dp->v.data(), qkv, 53, -1, 1);
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  auto run_naive = [dp, bh, seq, d, scale] {
    attention_naive(dp->q.data(), dp->k.data(), dp->v.data(), dp->o_naive.data(), dp->s.data(), bh, seq, d, scale);
    keep(dp->o_naive.data());
  };
  run_naive();  // the flash check's second opinion, even when naive is not timed
  // Four query rows of the last head against a double reference. Outputs are
  // averages of values in [-1, 1]; fp32 accumulation over seq terms stays within 1e-4.
  auto check_rows = [dp, bh, seq, d, scale](Check& check, const std::vector<float>& out) {
    const size_t off = static_cast<size_t>(bh - 1) * seq * d;
    const auto& q = dp->q;
    const auto& k = dp->k;
    const auto& v = dp->v;
    for (size_t row : sample_indices(static_cast<size_t>(seq), 4, 54)) {
      std::vector<double> sr(seq);
      double m = -INFINITY, sum = 0;
      for (int j = 0; j < seq; ++j) {
        double dot = 0;
        for (int c = 0; c < d; ++c)
          dot += static_cast<double>(q[off + row * d + c]) * k[off + static_cast<size_t>(j) * d + c];
        sr[j] = dot * scale;
        m = std::max(m, sr[j]);
      }
      for (int j = 0; j < seq; ++j) sum += sr[j] = std::exp(sr[j] - m);
      for (int c = 0; c < d; ++c) {
        double want = 0;
        for (int j = 0; j < seq; ++j) want += sr[j] / sum * v[off + static_cast<size_t>(j) * d + c];
        check.compare(out[off + row * d + c], want, 1e-4);
      }
    }
  };
  const double sd = seq, dd = d, bhd = bh;
  spec::MeasurementRecord base;
  base.dtype = "fp32";
  base.m = seq;
  base.n = d;
  base.k = seq;
  base.batch = bh;
  base.flops = 4.0 * sd * sd * dd * bhd;  // the two GEMMs (FlashAttention's convention), non-causal
  const std::string tag = fmt::format("s{}_d{}_bh{}", seq, d, bh);
  if (naive) {
    Case c;
    c.run = run_naive;
    c.check = [=](Check& check) { check_rows(check, dp->o_naive); };
    c.record = base;
    c.record.name = "attention_naive_" + tag;
    c.record.cls = spec::MeasurementClass::kAttentionNaive;
    // Q, K, V read and O written; S written, read and P written by softmax, P read (fp32).
    c.record.bytes = 16.0 * sd * dd * bhd + 16.0 * sd * sd * bhd;
    c.record.launches = 3;
    c.record.algorithm = "Eigen S = Q K^T, row softmax (std::exp), Eigen O = P V; per head; non-causal";
    cases.push_back(std::move(c));
  }
  if (flash) {
    Case c;
    c.run = [dp, bh, seq, d, scale] {
      attention_flash(dp->q.data(), dp->k.data(), dp->v.data(), dp->o_flash.data(), bh, seq, d, scale);
      keep(dp->o_flash.data());
    };
    c.check = [=](Check& check) {
      check_rows(check, dp->o_flash);
      for (size_t i = 0; i < qkv; ++i) check.compare(dp->o_flash[i], dp->o_naive[i], 1e-4);  // every output
    };
    c.record = base;
    c.record.name = "attention_flash_" + tag;
    c.record.cls = spec::MeasurementClass::kAttentionFlash;
    c.record.bytes = 16.0 * sd * dd * bhd;  // Q, K, V read, O written (fp32)
    c.record.launches = 1;
    c.record.algorithm = fmt::format("tiled online softmax, plain C++, Br={} Bc={}; non-causal", kBlockQ, kBlockK);
    cases.push_back(std::move(c));
  }
}

}  // namespace

void run_attention(Suite& b) {
  const bool naive = b.wants(spec::MeasurementClass::kAttentionNaive);
  const bool flash = b.wants(spec::MeasurementClass::kAttentionFlash);
  if (!naive && !flash) return;
  std::vector<Case> cases;
  if (b.quick()) {
    for (int seq : {128, 256, 384, 512}) attention_cases(cases, naive, flash, 2, seq, 64);
  } else {
    for (int seq : {128, 256, 512, 1024, 2048}) attention_cases(cases, naive, flash, 4, seq, 64);
    for (int seq : {256, 1024}) attention_cases(cases, naive, flash, 4, seq, 128);
  }
  b.run(cases);
}

}  // namespace ridgeline::host_bench
