// Invariants over the whole shipped space: every GPU profile x every model x a
// grid of techniques, micro-batches and parallel layouts. What must hold
// follows from the cost and memory models themselves (include/ridgeline/cost/
// cost.hpp, memory/memory.hpp), not from any one number:
//  - every output is finite and non-negative, and "fits" means total <= capacity;
//  - the roofline time of every kernel is non-increasing in HBM bandwidth, peak
//    FLOP/s and link bandwidth, so a slower GPU never gives a shorter step;
//  - saved activations scale with the micro-batch, so memory never shrinks as
//    it grows (one micro-batch per step, no pipeline: the in-flight count is 1);
//  - recomputation drops saved tensors and re-runs forward kernels, so it never
//    adds activation memory nor removes executed FLOPs;
//  - MFU ceiling: each kernel's time is at least its FLOPs at peak[dtype] x its
//    efficiency (GEMM tile quantization only adds waves; only GEMM and attention
//    kernels carry model FLOPs), so the model FLOPs one GPU completes per second
//    are at most R = max over precisions p of peak[p] x max(gemm_frac[p],
//    attention_frac). Hence MFU and HFU <= R / bf16 peak; against the peak of the
//    precision used, MFU <= that precision's best efficiency (0.80 with the
//    default efficiencies); and a 16- or 32-bit plan's MFU is <= 1. An fp8 plan's
//    GEMMs run at twice the bf16 peak, so its MFU against bf16 may exceed 1 (the
//    test reports the highest seen).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "../../fuzz/harness.hpp"
#include "ridgeline/cost/cost.hpp"
#include "ridgeline/spec/plan_fields.hpp"
#include "test_support.hpp"

using namespace ridgeline;
namespace fs = std::filesystem;

namespace {

std::vector<std::string> shipped(const char* dir) {
  std::vector<std::string> ids;
  for (const auto& e : fs::directory_iterator(fs::path(RIDGELINE_SOURCE_DIR) / dir))
    if (e.path().extension() == ".yaml") ids.push_back(e.path().stem().string());
  std::sort(ids.begin(), ids.end());
  return ids;
}

engine::Prediction eval(const spec::ModelSpec& m, const spec::PlanSpec& p, const spec::HardwareSpec& hw) {
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  return engine::evaluate(m, p, hw, opt);
}

/// a <= b up to rounding.
bool le(double a, double b) { return a <= b * (1 + 1e-9) + 1e-300; }

/// Model FLOP/s one GPU can complete at best (see the file comment).
double best_flop_rate(const spec::HardwareSpec& hw) {
  const cost::CostParams c = cost::resolve(hw, true);
  const double attention = *std::max_element(c.attention_frac.begin(), c.attention_frac.end());
  double best = 0;
  for (int i = 0; i < spec::kPeakCount; ++i)
    best = std::max(best, c.peak_flop_per_s[i] * std::max(c.gemm_frac[i], attention));
  return best;
}

double max_efficiency(const spec::HardwareSpec& hw, spec::Peak p) {
  const cost::CostParams c = cost::resolve(hw, true);
  const double attention = *std::max_element(c.attention_frac.begin(), c.attention_frac.end());
  return std::max(c.gemm_frac[static_cast<int>(p)], attention);
}

spec::HardwareSpec scaled(spec::HardwareSpec hw, double hbm, double peak, double link) {
  // The same NCCL channels (SMs taken from overlapped compute) on the slower link.
  if (hw.interconnect.comm_channels == 0)
    hw.interconnect.comm_channels = static_cast<int>(cost::resolve(hw, true).comm_channels);
  hw.hbm_bytes_per_s *= hbm;
  for (auto& x : hw.peak_flop_per_s) x *= peak;
  hw.interconnect.intra_node_bytes_per_s *= link;
  hw.interconnect.inter_node_bytes_per_s *= link;
  hw.interconnect.nic_bytes_per_s *= link;
  return hw;
}

struct Layout {
  const char* name;
  int tp, pp, dp, zero;
  bool sp;
  int steps_micro;  // micro-batches per step per DP rank (0: global batch unset, one)
};

constexpr Layout kLayouts[] = {
    {"single", 1, 1, 1, 0, false, 0},   {"tp8+sp", 8, 1, 1, 0, true, 0}, {"dp8", 1, 1, 8, 0, false, 0},
    {"dp8 zero3", 1, 1, 8, 3, false, 0}, {"tp8 sp pp4 dp4", 8, 4, 4, 1, true, 8},
};

}  // namespace

TEST_CASE("invariants: every shipped GPU x model x technique grid") {
  const auto start = std::chrono::steady_clock::now();
  const auto gpus = shipped("hardware_profiles");
  const auto models = shipped("models");
  REQUIRE(gpus.size() >= 10);
  REQUIRE(models.size() >= 20);

  using spec::Precision;
  using spec::RecomputeKind;
  const Precision precisions[] = {Precision::kBf16, Precision::kFp16, Precision::kFp8, Precision::kFp32};
  const RecomputeKind recomputes[] = {RecomputeKind::kNone, RecomputeKind::kSelective, RecomputeKind::kFull};
  const spec::AttentionKind attentions[] = {spec::AttentionKind::kNaive, spec::AttentionKind::kFlash2};
  const spec::Fusion fusions[] = {spec::Fusion::kEager, spec::Fusion::kFused, spec::Fusion::kCompiled};
  const int micro_batches[] = {1, 2, 4};

  long checked = 0, invalid = 0, fitting = 0, failures = 0;
  double max_mfu_16 = 0, max_mfu_fp8 = 0;
  std::string max_fp8_where;
  auto fail = [&](const std::string& what) {
    if (++failures <= 20) FAIL_CHECK(what);  // the first few, in full
  };

  for (const auto& gpu_id : gpus) {
    const auto hw = test::gpu(gpu_id);
    const auto slow_hbm = scaled(hw, 0.5, 1, 1);
    const auto slow_peak = scaled(hw, 1, 0.5, 1);
    const auto slow_link = scaled(hw, 1, 1, 0.5);
    const double bf16 = hw.peak(spec::Peak::kBf16);
    const double mfu_ceiling = best_flop_rate(hw) / bf16;
    std::array<double, spec::kPeakCount> eff_of{};
    for (int i = 0; i < spec::kPeakCount; ++i) eff_of[i] = max_efficiency(hw, static_cast<spec::Peak>(i));
    for (const auto& model_id : models) {
      const auto m = test::model(model_id);
      for (const auto& lay : kLayouts)
        for (const auto prec : precisions) {
          if (prec == Precision::kFp8 && !hw.supports(spec::Peak::kFp8)) continue;
          for (const auto att : attentions)
            for (const auto fus : fusions) {
              // Per micro-batch size and recompute kind: activations, total memory, hardware FLOPs.
              double act[3][3] = {}, total[3][3] = {}, hw_flops[3][3] = {};
              bool ok[3][3] = {};
              for (int bi = 0; bi < 3; ++bi)
                for (int ri = 0; ri < 3; ++ri) {
                  spec::PlanSpec p;
                  p.seq_len = std::min(4096, m.max_seq_len);
                  p.micro_batch = micro_batches[bi];
                  p.precision = prec;
                  p.recompute = {recomputes[ri], 0};
                  p.attention = att;
                  p.fusion = fus;
                  p.parallel.tp = lay.tp;
                  p.parallel.pp = lay.pp;
                  p.parallel.dp = lay.dp;
                  p.parallel.zero = lay.zero;
                  p.parallel.sp = lay.sp;
                  if (lay.steps_micro > 0) p.global_batch = lay.steps_micro * p.micro_batch * lay.dp;
                  const auto r = eval(m, p, hw);
                  const std::string where = gpu_id + " " + model_id + " " + lay.name + " mb" +
                                            std::to_string(p.micro_batch) + " " + spec::plan_summary(p);
                  if (r.status == engine::Status::kInvalid) {
                    ++invalid;
                    continue;
                  }
                  ++checked;
                  ok[bi][ri] = true;
                  if (auto bad = fuzz::check_prediction(r); !bad.empty()) fail(where + ": " + bad);
                  if ((r.status == engine::Status::kOk) != r.memory.fits) fail(where + ": status disagrees with fits");
                  if (r.memory.fits) {
                    ++fitting;
                    if (!le(r.memory.total, r.memory.capacity)) fail(where + ": fits but total > capacity");
                  }
                  // A slower GPU never gives a shorter step.
                  const double t = r.step.time_s;
                  if (!le(t, eval(m, p, slow_hbm).step.time_s)) fail(where + ": half the HBM bandwidth is faster");
                  if (!le(t, eval(m, p, slow_peak).step.time_s)) fail(where + ": half the peak is faster");
                  if (p.parallel.gpus() > 1 && !le(t, eval(m, p, slow_link).step.time_s))
                    fail(where + ": half the link bandwidth is faster");
                  // MFU ceiling.
                  if (!le(r.step.mfu, mfu_ceiling) || !le(r.step.hfu, mfu_ceiling))
                    fail(where + ": MFU " + std::to_string(r.step.mfu) + " / HFU " + std::to_string(r.step.hfu) +
                         " above the cost model's ceiling " + std::to_string(mfu_ceiling));
                  // Against the peak of the precision used, the ceiling is that precision's best efficiency.
                  const spec::Peak used = prec == Precision::kFp32   ? spec::Peak::kFp32
                                          : prec == Precision::kFp16 ? spec::Peak::kFp16
                                          : prec == Precision::kFp8  ? spec::Peak::kFp8
                                                                     : spec::Peak::kBf16;
                  const double eff = eff_of[static_cast<int>(used)];
                  if (!le(r.step.mfu_dtype, eff))
                    fail(where + ": MFU against the " + std::string(spec::name(used)) + " peak " +
                         std::to_string(r.step.mfu_dtype) + " above its best efficiency " + std::to_string(eff));
                  if (prec == Precision::kFp8) {
                    if (r.step.mfu > max_mfu_fp8) max_mfu_fp8 = r.step.mfu, max_fp8_where = where;
                  } else {
                    max_mfu_16 = std::max(max_mfu_16, r.step.mfu);
                    if (!le(r.step.mfu, 1.0)) fail(where + ": MFU above 1: " + std::to_string(r.step.mfu));
                  }
                  act[bi][ri] = r.memory.activations;
                  total[bi][ri] = r.memory.total;
                  hw_flops[bi][ri] = r.step.hardware_flops;
                }
              const std::string where = gpu_id + " " + model_id + " " + lay.name + " " +
                                        std::string(spec::to_string(prec)) + " " + spec::to_string(att) + " " +
                                        spec::to_string(fus);
              for (int ri = 0; ri < 3; ++ri)
                for (int bi = 1; bi < 3; ++bi)
                  if (ok[bi][ri] && ok[bi - 1][ri] &&
                      (!le(total[bi - 1][ri], total[bi][ri]) || !le(act[bi - 1][ri], act[bi][ri])))
                    fail(where + " recompute " + std::to_string(ri) + ": memory shrinks from micro-batch " +
                         std::to_string(micro_batches[bi - 1]) + " to " + std::to_string(micro_batches[bi]));
              for (int bi = 0; bi < 3; ++bi)
                for (int ri = 1; ri < 3; ++ri)
                  if (ok[bi][ri] && ok[bi][0]) {
                    if (!le(act[bi][ri], act[bi][0]))
                      fail(where + " mb" + std::to_string(micro_batches[bi]) + ": recompute " + std::to_string(ri) +
                           " adds activation memory");
                    if (!le(hw_flops[bi][0], hw_flops[bi][ri]))
                      fail(where + " mb" + std::to_string(micro_batches[bi]) + ": recompute " + std::to_string(ri) +
                           " removes executed FLOPs");
                  }
            }
        }
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  MESSAGE("invariants: " << checked << " configurations checked (" << fitting << " fit), " << invalid
                         << " rejected as invalid, " << gpus.size() << " GPUs x " << models.size() << " models, "
                         << seconds << " s; highest MFU " << max_mfu_16 << " (16/32-bit), " << max_mfu_fp8
                         << " (fp8, against the bf16 peak: " << max_fp8_where << ")");
  CHECK(failures == 0);
  CHECK(checked > 100000);
}
