#include "ridgeline/report/capacity_view.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <limits>

#include "ridgeline/cost/cost.hpp"
#include "ridgeline/memory/memory.hpp"
#include "ridgeline/report/json_number.hpp"
#include "ridgeline/report/prediction_view.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/plan_fields.hpp"
#include "ridgeline/techniques/passes.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::report {

using nlohmann::json;

namespace {

/// A range as [lo, hi]; null when there is none.
json range_json(const Range& r) {
  if (!r.valid || !std::isfinite(r.lo) || !std::isfinite(r.hi)) return nullptr;
  return json::array({r.lo, r.hi});
}

/// The interval of a layout of the search: from its traits when the caller
/// gave them, else an invalid one that says so.
void set_layout_interval(LayoutRow& r, const uncertainty::RunTraits* traits, const uncertainty::IntervalModel& model,
                         double level) {
  if (traits) {
    r.interval = model.run_interval(*traits, level);
  } else {
    r.interval.level = level;
    r.interval.note = "no interval: the layout's traits were not evaluated";
  }
  r.step_time_range = time_range(r.interval, r.step_time_s);
  r.mfu_range = rate_range(r.interval, r.mfu);
  r.days_range = time_range(r.interval, r.days);
  r.cost_range = time_range(r.interval, r.cost_usd);
}

std::string peak_text(const spec::HardwareSpec& hw, spec::Peak p) {
  return units::format_flop_rate(hw.peak(p));
}

constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();

LayoutRow layout_row(const search::Candidate& c, int rank, bool price_known) {
  LayoutRow r;
  const auto& l = c.layout;
  r.rank = rank;
  r.tp = l.tp;
  r.pp = l.pp;
  r.dp = l.dp;
  r.cp = l.cp;
  r.micro_batch = l.micro_batch;
  r.vpp = l.vpp;
  r.zero = l.zero;
  r.sp = l.sp;
  r.recompute = spec::to_string(l.recompute);
  r.precision = spec::to_string(l.precision);
  r.label = layout_label(l);
  r.step_time_s = c.step_time_s;
  r.mfu = c.mfu;
  r.hfu = c.hfu;
  r.memory_bytes = c.memory_bytes;
  r.tokens_per_s = c.tokens_per_s;
  r.bubble_fraction = c.bubble_fraction;
  r.exposed_comm_s = c.exposed_comm_s;
  r.days = c.days;
  r.gpu_hours = c.gpu_hours;
  r.cost_usd = price_known ? c.cost_usd : kUnknown;
  return r;
}

/// The step as it is spent (StepSpent). The engine's step is
///   X (compute + exposed communication + bubble + CPU offload + host wait),
/// X = techniques::executed_steps_per_step (fp16 steps redone after an
/// overflow); exposed communication includes the SM contention of
/// overlapped collectives (StepResult::comm_slowdown_s), shown as its own
/// bar. The host wait is what remains of the step over the rest.
StepSpent make_step_spent(const engine::Prediction& pred, const spec::PlanSpec& plan) {
  StepSpent s;
  const auto& st = pred.step;
  s.step_time_s = st.time_s;
  const int coll = static_cast<int>(spec::KernelClass::kCollective), p2p = static_cast<int>(spec::KernelClass::kP2p);
  std::vector<StepPart> compute;
  for (int i = 0; i < spec::kKernelClassCount; ++i) {
    if (i == coll || i == p2p || !(pred.time_by_class[i] > 0)) continue;
    compute.push_back({std::string(spec::name(static_cast<spec::KernelClass>(i))), "compute", pred.time_by_class[i], 0});
  }
  std::stable_sort(compute.begin(), compute.end(), [](const StepPart& a, const StepPart& b) { return a.time_s > b.time_s; });
  double compute_s = 0;
  for (const auto& c : compute) compute_s += c.time_s;
  s.comm_total_s = pred.time_by_class[coll] + pred.time_by_class[p2p];
  const double contention = std::max(0.0, st.comm_slowdown_s);
  s.comm_exposed_s = std::max(0.0, st.exposed_comm_s - contention);
  s.comm_hidden_s = std::max(0.0, s.comm_total_s - s.comm_exposed_s);
  if (s.comm_total_s > 0) {
    s.comm_hidden_share = s.comm_hidden_s / s.comm_total_s;
    s.comm_exposed_share = s.comm_exposed_s / s.comm_total_s;
  }
  const double x = techniques::executed_steps_per_step(plan);
  const double once = x > 0 ? st.time_s / x : st.time_s;
  const double offload = std::max(0.0, st.offload.exposed_s);  // CPU Adam and the host link (techniques/offload.hpp)
  const double host_wait = std::max(0.0, once - compute_s - st.exposed_comm_s - st.bubble_s - offload);
  s.parts = std::move(compute);
  const auto add = [&](const char* name, const char* kind, double t) {
    if (t > 0) s.parts.push_back({name, kind, t, 0});
  };
  add("exposed communication", "exposed_comm", s.comm_exposed_s);
  add("comm SM contention", "comm_contention", contention);
  add("pipeline bubble", "bubble", st.bubble_s);
  add("CPU offload", "cpu_offload", offload);
  // Below a nanosecond the remainder is rounding, not a wait.
  add("host dispatch wait", "host_wait", host_wait > 1e-9 * std::max(1.0, once) ? host_wait : 0.0);
  add("redone fp16 steps", "skipped_steps", st.time_s - once);
  for (auto& p : s.parts) p.share = st.time_s > 0 ? p.time_s / st.time_s : 0;
  return s;
}

std::vector<TimeShare> shares(const double* times, int n, std::string_view (*label)(int)) {
  std::vector<TimeShare> out;
  double total = 0;
  for (int i = 0; i < n; ++i) total += times[i];
  for (int i = 0; i < n; ++i)
    if (times[i] > 0) out.push_back({std::string(label(i)), times[i], total > 0 ? times[i] / total : 0});
  std::stable_sort(out.begin(), out.end(), [](const TimeShare& a, const TimeShare& b) { return a.time_s > b.time_s; });
  return out;
}

std::string_view class_label(int i) { return spec::name(static_cast<spec::KernelClass>(i)); }
std::string_view phase_label(int i) { return spec::name(static_cast<spec::Phase>(i)); }

Sizing make_sizing(const CapacityInputs& in, const Answer& a, double model_params) {
  Sizing s;
  if (in.budget.kind == BudgetKind::kNone) return s;
  s.present = true;
  s.budget_kind = in.budget.kind == BudgetKind::kUsd ? "usd" : "gpu_hours";
  s.budget_value = in.budget.value;
  s.gpu_hours = budget_gpu_hours(in.budget, *in.gpu);
  s.achieved_flop_per_s_per_gpu = a.achieved_flop_per_s_per_gpu;
  // Chinchilla (Hoffmann et al. 2022): C = 6 N D with D = 20 N, so C = 120 N^2.
  s.compute_flop = s.gpu_hours * 3600.0 * s.achieved_flop_per_s_per_gpu;
  s.optimal_params = std::sqrt(s.compute_flop / 120.0);
  s.optimal_tokens = 20.0 * s.optimal_params;
  s.model_params = model_params;
  s.model_tokens = tokens_for_gpu_hours(in.prediction, s.gpu_hours);
  s.model_tokens_per_param = model_params > 0 ? s.model_tokens / model_params : 0;
  s.params_ratio = s.optimal_params > 0 ? model_params / s.optimal_params : 0;
  const std::string tpp = fmt::format("{:.1f}", s.model_tokens_per_param);
  if (s.params_ratio > 1.5)
    s.verdict = fmt::format(
        "The chosen model is {:.1f}x larger than compute-optimal for this budget: it would see {} tokens per "
        "parameter instead of 20 (under-trained). A {}-parameter model trained on {} tokens reaches a lower "
        "loss for the same compute.",
        s.params_ratio, tpp, units::format_count(s.optimal_params), units::format_count(s.optimal_tokens));
  else if (s.params_ratio < 1 / 1.5)
    s.verdict = fmt::format(
        "The chosen model is {:.1f}x smaller than compute-optimal for this budget: it would see {} tokens per "
        "parameter instead of 20 (over-trained, as Llama 3 deliberately is: cheaper to serve). The "
        "compute-optimal model has {} parameters trained on {} tokens.",
        1 / s.params_ratio, tpp, units::format_count(s.optimal_params), units::format_count(s.optimal_tokens));
  else
    s.verdict = fmt::format(
        "The chosen model is close to compute-optimal for this budget ({:.2f}x the optimal {} parameters; {} "
        "tokens per parameter against Chinchilla's 20).",
        s.params_ratio, units::format_count(s.optimal_params), tpp);
  return s;
}

/// The cost parameters the plan's kernels are costed at (engine::resolve_for:
/// a training run at the plan's power limit).
cost::CostParams plan_costs(const CapacityInputs& in) {
  engine::EvalOptions o;
  o.use_calibration = in.use_calibration;
  return engine::resolve_for(*in.gpu, in.plan, o);
}

Roofline make_roofline(const CapacityInputs& in) {
  Roofline r;
  const spec::HardwareSpec& hw = *in.gpu;
  const cost::CostParams c = plan_costs(in);
  r.hbm_bytes_per_s = hw.hbm_bytes_per_s;
  r.boost_clock_hz = hw.clock_hz;
  r.clock_hz = hw.clock_hz * c.clock_ratio;
  r.power_limit_w = in.plan.power_limit_w;
  r.clock_ratio = c.clock_ratio;
  r.training_clock_frac = c.training_clock_frac;
  r.clock_scale = c.clock_scale;
  // Roofs at the clock the kernels are costed at (the spec-sheet peaks are
  // quoted at boost).
  for (spec::Peak p : {spec::Peak::kFp32, spec::Peak::kTf32, spec::Peak::kBf16, spec::Peak::kFp8})
    if (hw.supports(p))
      r.roofs.push_back({std::string(spec::name(p)), c.peak_flop_per_s[static_cast<int>(p)],
                         hw.peak_flop_per_s[static_cast<int>(p)], cost::ridge_point(c, p)});
  for (const auto& k : in.prediction.kernels) {
    const bool comm = k.cls == spec::KernelClass::kCollective || k.cls == spec::KernelClass::kP2p;
    if (comm || k.flops <= 0 || k.hbm_bytes <= 0 || k.time_s <= 0 || k.intensity <= 0 || k.count <= 0) {
      ++r.omitted;
      continue;
    }
    RooflinePoint pt;
    pt.name = std::string(k.name);
    pt.phase = std::string(spec::name(k.phase));
    pt.cls = std::string(spec::name(k.cls));
    pt.dtype = std::string(spec::name(k.dtype));
    pt.bound = std::string(cost::name(k.bound));
    pt.intensity = k.intensity;
    pt.flop_per_s = k.flops * k.count / k.time_s;
    pt.time_s = k.time_s;
    pt.share = k.share;
    pt.hbm_bytes = k.hbm_bytes;
    pt.flops = k.flops;
    pt.count = k.count;
    r.points.push_back(std::move(pt));
  }
  std::stable_sort(r.points.begin(), r.points.end(),
                   [](const RooflinePoint& a, const RooflinePoint& b) { return a.time_s > b.time_s; });
  return r;
}

std::vector<Assumption> make_assumptions(const CapacityInputs& in, const CapacityView& v) {
  using units::format_bytes;
  using units::format_percent;
  using units::format_seconds;
  const spec::HardwareSpec& hw = *in.gpu;
  const cost::CostParams c = plan_costs(in);
  const std::string eff_source =
      c.calibrated ? fmt::format("calibration block of {} (fitted from {})", hw.source_file,
                                 hw.calibration.measurements)
                   : std::string("documented default, src/cost/cost.cpp default_efficiency()");
  const auto pk = [](spec::Peak p) { return static_cast<int>(p); };
  std::vector<Assumption> a;
  a.push_back({"Framework workspace", format_bytes(memory::kWorkspaceBytes) + " per GPU",
               "include/ridgeline/memory/memory.hpp kWorkspaceBytes: CUDA context + cuBLAS and kernel workspaces, "
               "outside the caching allocator (PyTorch on H100: ~0.5 GiB context, 32 MiB cuBLAS workspace)"});
  a.push_back({"NCCL buffers", format_bytes(memory::kNcclBytes) + " per GPU when any collective runs",
               "include/ridgeline/memory/memory.hpp kNcclBytes: NCCL communicator buffers"});
  a.push_back({"Fragmentation allowance",
               fmt::format("{} of allocated memory: reserved = allocated x {:g}",
                           format_percent(v.answer.memory.allocator_reserve), 1 + v.answer.memory.allocator_reserve),
               fmt::format("frameworks/{}.yaml allocator_reserve ({}): what PyTorch's "
                           "caching allocator holds beyond what it hands out, max_memory_reserved / "
                           "max_memory_allocated - 1 at the peak",
                           v.plan.framework_id, v.plan.framework_name)});
  {
    const Roofline& R = v.roofline;
    a.push_back({"Clock the kernels run at",
                 fmt::format("{:.0f} MHz of the {:.0f} MHz boost the spec-sheet peaks are quoted at: × {:.3f}",
                             R.clock_hz / 1e6, R.boost_clock_hz / 1e6, R.clock_ratio),
                 R.power_limit_w > 0
                     ? fmt::format("{} compute.sustained_clock, scaled to the {:.0f} W power limit by the cube "
                                   "root of power (spec::clock_at_power)",
                                   v.gpu.source_file, R.power_limit_w)
                     : fmt::format("{} compute.sustained_clock (at the profile's TDP)", v.gpu.source_file)});
    a.push_back({"Training-clock fraction",
                 fmt::format("× {:.3f}: the clock a training run holds for hours, against the benchmarks' "
                             "sustained clock",
                             R.training_clock_frac),
                 "src/cost/cost.cpp training_clock_fraction(): the median over the published end-to-end "
                 "training groups of the clock fraction that makes each group's median error zero"});
    const RoofLine* bf16 = nullptr;
    for (const auto& r : R.roofs)
      if (r.precision == "bf16") bf16 = &r;
    a.push_back({"Roofs (the roofline's compute ceilings)",
                 fmt::format("spec-sheet dense peak × {:.3f} × {:.3f} = × {:.3f}{}", R.clock_ratio,
                             R.training_clock_frac, R.clock_scale,
                             bf16 ? fmt::format(" (bf16: {} → {})", units::format_flop_rate(bf16->spec_peak_flop_per_s),
                                                units::format_flop_rate(bf16->peak_flop_per_s))
                                  : std::string()),
                 "src/cost/cost.cpp resolve(): every tensor and vector peak follows the clock; MFU and HFU are "
                 "against the spec-sheet peak, the efficiencies below against the roof"});
  }
  a.push_back({"GEMM efficiency",
               fmt::format("{} of the roof (bf16){}", format_percent(c.gemm_frac[pk(spec::Peak::kBf16)]),
                           hw.supports(spec::Peak::kFp8)
                               ? fmt::format(", {} (fp8)", format_percent(c.gemm_frac[pk(spec::Peak::kFp8)]))
                               : std::string()),
               eff_source + (c.calibrated ? std::string()
                                          : ": best achievable bf16 matmul (MAMF) H100 SXM 794.5 of 989 TFLOP/s = "
                                            "80%, B200 78%, A100 87%; plus tile and wave quantization with " +
                                                fmt::format("{:.0f}x{:.0f}", c.tile_m, c.tile_n) + " tiles")});
  a.push_back({"Fused attention efficiency",
               fmt::format("{} of the roof (FlashAttention-2)",
                           format_percent(c.attention_frac[static_cast<int>(spec::AttentionKind::kFlash2)])),
               eff_source + (c.calibrated ? std::string()
                                          : ": FlashAttention-2 trains GPT models at 50-60% of A100 peak (Dao 2023); "
                                            "on Hopper FA2 lacks wgmma and reaches ~35-40%, FA3 60-75% (Shah et al. "
                                            "2024)")});
  a.push_back({"HBM efficiency",
               fmt::format("{} of {} for streaming kernels, plus {} per kernel",
                           format_percent(c.mem_frac[static_cast<int>(spec::KernelClass::kElementwise)]),
                           units::format_byte_rate(hw.hbm_bytes_per_s), format_seconds(c.hbm_latency_s)),
               eff_source + (c.calibrated ? std::string()
                                          : ": STREAM-like kernels reach ~84-90% of the spec bandwidth (gpu-benches, "
                                            "BabelStream); norms, softmax, loss and embedding get lower per-class "
                                            "multipliers")});
  a.push_back({"Kernel launch overhead", format_seconds(c.launch_s) + " per launch (" +
                                             format_seconds(c.graph_launch_s) + " under CUDA graphs)",
               eff_source + (c.calibrated ? std::string()
                                          : ": back-to-back queued kernels cost ~2.4-2.6 us each (gpu-benches "
                                            "small-kernel fits); the profile's figure wins")});
  a.push_back({"Collective efficiency",
               format_percent(c.comm_frac) +
                   " of link bandwidth (NCCL ring/tree/NVLS by message size; LL/LL128/Simple protocols)",
               eff_source + (c.calibrated ? std::string()
                                          : ": NCCL reaches ~80% of link bandwidth as bus bandwidth on large "
                                            "messages")});
  a.push_back({"FLOP convention",
               fmt::format("model FLOPs per step = Megatron-LM num_floating_point_operations; attention '{}'; MFU "
                           "against the dense bf16 peak ({} per GPU), HFU adds recomputation",
                           v.answer.flops_convention, peak_text(hw, spec::Peak::kBf16)),
               "DESIGN.md 'Reference formulas'; causal = core attention's masked half skipped (current Megatron), "
               "full = the older convention of Korthikanti et al. and Narayanan et al."});
  a.push_back({"Training tokens",
               v.plan.tokens_source == "plan"                 ? "as given (--tokens or the plan)"
               : v.plan.tokens_source == "budget"             ? "what the budget buys at the predicted step time"
               : v.plan.tokens_source == "per_billion_tokens" ? "1B tokens (a fine-tune has no compute-optimal length)"
               : v.plan.tokens_source == "dataset_epoch"      ? "one epoch of the dataset (--dataset-tokens)"
                                                              : "20 tokens per parameter",
               "Chinchilla (Hoffmann et al. 2022): compute-optimal D ~ 20 N"});
  a.push_back({"Compute-optimal sizing", "C = 6 N D and D = 20 N, so N = sqrt(C / 120)",
               "Hoffmann et al. 2022 (Chinchilla); C = budget GPU-hours x 3600 s x the achieved model FLOP/s per GPU"});
  a.push_back({"Price",
               hw.has_price() ? fmt::format("${:.2f} per GPU-hour", hw.price_per_gpu_hour_usd)
                              : std::string("unknown: cost is not computed"),
               hw.has_price() ? (hw.sources.count("price_per_gpu_hour") ? hw.sources.at("price_per_gpu_hour") : "profile")
                              : std::string("the profile gives no price_per_gpu_hour")});
  const auto& t = in.prediction.totals;
  a.push_back({"Goodput",
               t.completes
                   ? fmt::format("{} (ideal {}): checkpoint {} every {}, written in {} at {}; {} expected "
                                 "interruptions at {:.3g} per GPU-hour (job MTBF {}), restart {} each",
                                 format_percent(t.goodput), units::format_duration(t.ideal_wall_s),
                                 format_bytes(t.checkpoint_bytes),
                                 t.checkpoint_interval_s > 0 ? units::format_duration(t.checkpoint_interval_s)
                                                             : std::string("never (no failures)"),
                                 units::format_duration(t.checkpoint_write_s),
                                 units::format_byte_rate(t.checkpoint_bandwidth_bytes_per_s),
                                 fmt::format("{:.1f}", t.expected_failures), t.failure_rate_per_gpu_hour,
                                 t.mtbf_s > 0 ? units::format_duration(t.mtbf_s) : std::string("none"),
                                 units::format_duration(t.restart_s))
                   : fmt::format("never completes: the job fails every {} on average, sooner than half a "
                                 "checkpoint segment plus a restart ({}) recover (ideal {})",
                                 units::format_duration(t.mtbf_s), units::format_duration(t.restart_s),
                                 units::format_duration(t.ideal_wall_s)),
               "expected wall clock W = T (1 + delta/tau) / (1 - ((tau + delta)/2 + R)/M), tau by Young/Daly; "
               "failure rate from Llama 3 (419 interruptions in 54 days on 16,384 GPUs) unless --failure-rate or "
               "the profile gives one; docs/accuracy.md 'Goodput and energy'"});
  a.push_back({"Energy",
               !hw.has_tdp() ? std::string("unknown: energy is not computed")
               : t.power_given
                   ? fmt::format("{} x TDP {:.0f} W per GPU, PUE {:g}", format_percent(t.power_utilization), hw.tdp_w,
                                 t.pue)
                   : fmt::format("{:.0f} W per GPU: idle {:.0f} W to TDP {:.0f} W at a compute-bound share of {}, "
                                 "PUE {:g}",
                                 t.power_w, t.idle_w, hw.tdp_w, format_percent(t.compute_bound_share), t.pue),
               !hw.has_tdp()   ? std::string("the profile gives no tdp")
               : t.power_given ? std::string("plan power_utilization (average draw as a fraction of TDP)")
                               : std::string("P = P_idle + (TDP - P_idle) x the step's time in compute-bound "
                                             "kernels / step time; idle: the profile's power.idle, else 11.5% of "
                                             "TDP")});
  return a;
}

}  // namespace

Range time_range(const uncertainty::Interval& iv, double t) {
  if (!iv.valid()) return {};
  return {true, iv.time_lo(t), iv.time_hi(t)};
}

Range rate_range(const uncertainty::Interval& iv, double v) {
  if (!iv.valid()) return {};
  return {true, iv.rate_lo(v), iv.rate_hi(v)};
}

double budget_gpu_hours(const Budget& b, const spec::HardwareSpec& hw) {
  switch (b.kind) {
    case BudgetKind::kNone: return 0;
    case BudgetKind::kGpuHours: return b.value;
    case BudgetKind::kUsd: return hw.price_per_gpu_hour_usd > 0 ? b.value / hw.price_per_gpu_hour_usd : 0;
  }
  return 0;
}

double tokens_for_gpu_hours(const engine::Prediction& p, double gpu_hours) {
  const double step_gpu_hours = p.step.time_s * p.step.gpus / 3600.0;
  // Of the GPU-hours, the goodput's share trains (the rest is checkpoints, lost work and restarts).
  return step_gpu_hours > 0 ? gpu_hours * p.totals.goodput / step_gpu_hours * p.step.tokens_per_step : 0;
}

std::string layout_label(const search::Layout& l) {
  const spec::PlanSpec p = search::plan_for(spec::PlanSpec{}, l, 0);
  return spec::summary_line(p, spec::SummaryGroup::kLayout) + " " +
         spec::summary_of(p, {"micro_batch", "recompute", "precision"});
}

CapacityView make_capacity_view(const CapacityInputs& in) {
  const spec::HardwareSpec& hw = *in.gpu;
  const spec::ModelSpec& m = *in.model;
  const engine::Prediction& pred = in.prediction;
  const uncertainty::IntervalModel& intervals = in.intervals ? *in.intervals : uncertainty::shipped();
  CapacityView v;
  v.command = in.command;
  v.version = RIDGELINE_VERSION;
  v.interval_level = in.interval_level;

  auto& g = v.gpu;
  g.id = hw.id;
  g.name = hw.name;
  g.architecture = hw.architecture;
  g.memory_bytes = hw.memory_bytes;
  g.hbm_bytes_per_s = hw.hbm_bytes_per_s;
  g.source_file = std::filesystem::path(hw.source_file).lexically_normal().string();
  g.price_known = hw.has_price();
  g.tdp_known = hw.has_tdp();
  g.price_per_gpu_hour_usd = g.price_known ? hw.price_per_gpu_hour_usd : kUnknown;
  g.tdp_w = g.tdp_known ? hw.tdp_w : kUnknown;
  for (int i = 0; i < spec::kPeakCount; ++i)
    if (hw.peak_flop_per_s[i] > 0) g.peaks.emplace_back(std::string(spec::kPeakNames[i]), hw.peak_flop_per_s[i]);
  for (const auto& [field, text] : hw.sources) g.sources.push_back({field, text});

  auto& cal = v.calibration;
  cal.present = hw.calibration.present;
  cal.used = pred.calibrated;
  cal.measurements = hw.calibration.measurements;
  cal.device = hw.calibration.device;
  cal.date = hw.calibration.date;
  for (const auto& r : hw.calibration.residuals) cal.residuals.push_back({r.cls, r.records, r.median_abs_pct, r.p90_abs_pct});
  if (cal.used)
    cal.status = fmt::format("calibrated: efficiencies fitted from {} on {} ({})", cal.measurements, cal.device, cal.date);
  else if (cal.present)
    cal.status = "not used: the profile has a calibration block but --no-calibration was given; documented "
                 "default efficiencies";
  else
    cal.status = "not calibrated: documented default efficiencies (src/cost/cost.cpp); run `ridgeline calibrate` "
                 "on the GPU to fit them";
  if (in.stack_calibration) {
    const CalibrationUse use = calibration_use(in.stack_calibration, hw, in.plan);
    cal.runs_given = true;
    cal.runs_applied = use.applied();
    cal.runs_line = calibration_line(use);
    cal.runs_json = calibration_json(use);
  }

  auto& mf = v.model;
  mf.id = m.id;
  mf.name = m.name;
  mf.source_file = m.source_file;
  mf.params = pred.params.total;
  mf.active_params = pred.params.active;
  mf.trainable_params = pred.trainable_params;
  mf.layers = m.layers;
  mf.hidden = m.hidden;
  mf.heads = m.heads;
  mf.kv_heads = m.kv_heads;
  mf.ffn_hidden = m.ffn_hidden;
  mf.vocab = m.vocab;
  mf.architecture = fmt::format("{}, {}, {}", spec::name(m.activation), spec::name(m.norm), spec::name(m.position));

  auto& pf = v.plan;
  pf.summary = spec::plan_summary(in.plan);
  const spec::FrameworkSpec& fw = spec::framework(in.plan.framework);
  pf.framework_id = fw.id;
  pf.framework_name = fw.name;
  pf.plan = plan_json(in.plan, m);
  pf.gpus = in.plan.parallel.gpus();
  pf.micro_batch = in.plan.micro_batch;
  pf.global_batch = in.plan.effective_global_batch();
  pf.seq_len = graph::seq_len(m, in.plan);
  pf.tokens = pred.totals.tokens;
  pf.tokens_source = in.budget.kind != BudgetKind::kNone ? std::string("budget")
                                                        : std::string(engine::name(pred.totals.basis));

  auto& a = v.answer;
  const auto& st = pred.step;
  a.status = std::string(engine::name(pred.status));
  a.step_time_s = st.time_s;
  a.tokens_per_s = st.tokens_per_s;
  a.tokens_per_s_per_gpu = st.tokens_per_s / std::max(1LL, st.gpus);
  a.mfu = st.mfu;
  a.mfu_dtype = st.mfu_dtype;
  a.hfu = st.hfu;
  a.precision = spec::to_string(in.plan.precision);
  a.model_flops_per_step = st.model_flops;
  a.achieved_flop_per_s_per_gpu = st.time_s > 0 ? st.model_flops / st.time_s / std::max(1LL, st.gpus) : 0;
  a.compute_time_s = st.compute_time_s;
  a.exposed_comm_s = st.exposed_comm_s;
  a.bubble_s = st.bubble_s;
  a.bubble_fraction = st.bubble_fraction;
  a.host_s = st.host_s;
  a.host_bound = st.host_bound;
  a.comm_slowdown_s = st.comm_slowdown_s;
  a.micro_batches = st.micro_batches;
  a.flops_convention = st.flops_convention;
  a.memory = pred.memory;
  a.first_stage = stage_memory(pred.memory, pred.memory.first_stage);
  a.last_stage = stage_memory(pred.memory, pred.memory.last_stage);
  a.memory_fraction = pred.memory.capacity > 0 ? pred.memory.total / pred.memory.capacity : 0;
  a.tokens_per_step = st.tokens_per_step;
  const auto& t = pred.totals;
  a.tokens = t.tokens;
  a.steps = t.steps;
  // A run that never completes has no wall clock, GPU-hours, cost or energy.
  a.days = t.completes ? t.wall_s / 86400.0 : kUnknown;
  a.ideal_days = t.ideal_wall_s / 86400.0;
  a.goodput = t.goodput;
  a.gpu_hours = t.completes ? t.gpu_hours : kUnknown;
  a.cost_usd = hw.has_price() && t.completes ? t.cost_usd : kUnknown;
  a.energy_kwh = hw.has_tdp() && t.completes ? t.energy_kwh : kUnknown;
  a.interval = intervals.run_interval(uncertainty::traits_of(pred, in.plan, hw), in.interval_level);
  a.step_time_range = time_range(a.interval, a.step_time_s);
  a.tokens_per_s_range = rate_range(a.interval, a.tokens_per_s);
  a.mfu_range = rate_range(a.interval, a.mfu);
  if (in.budget.kind != BudgetKind::kNone) {
    // The budget fixes the GPU-hours; a slower step buys fewer tokens.
    a.tokens_range = rate_range(a.interval, a.tokens);
    const auto fixed = [&](double x) { return a.interval.valid() ? Range{true, x, x} : Range{}; };
    a.days_range = fixed(a.days);
    a.gpu_hours_range = fixed(a.gpu_hours);
    a.cost_range = fixed(a.cost_usd);
    a.energy_range = fixed(a.energy_kwh);
  } else {
    a.tokens_range = a.interval.valid() ? Range{true, a.tokens, a.tokens} : Range{};
    a.days_range = time_range(a.interval, a.days);
    a.gpu_hours_range = time_range(a.interval, a.gpu_hours);
    a.cost_range = time_range(a.interval, a.cost_usd);
    a.energy_range = time_range(a.interval, a.energy_kwh);
  }
  if (!hw.has_price()) a.cost_range = {};
  if (!hw.has_tdp()) a.energy_range = {};
  a.memory_range = uncertainty::memory_interval(pred.memory);

  const char* what = in.plan.finetune.mode == spec::FinetuneMode::kLora    ? "LoRA fine-tuning"
                     : in.plan.finetune.mode == spec::FinetuneMode::kQlora ? "QLoRA fine-tuning"
                                                                           : "training";
  v.title = fmt::format("{} {} on {} x {}", m.name, what, pf.gpus, hw.name);

  for (const auto& var : in.vary) v.vary_keys.push_back(var.key);
  v.techniques_searched = !in.technique_searches.empty() && in.technique_searches.size() == in.compare_rows.size();
  double best_time = 0;
  for (size_t i = 0; i < in.compare_rows.size(); ++i) {
    const auto& r = in.compare_rows[i];
    TechniqueRow row;
    row.settings = r.values;
    for (size_t k = 0; k < r.values.size(); ++k) row.label += (k ? " · " : "") + r.values[k];
    // Re-searched: the combination's own best layout when one fits; else
    // what it needs at the report's layout.
    const engine::Prediction* pr = &r.pred;
    const spec::PlanSpec* pl = &r.plan;
    if (v.techniques_searched) {
      const auto& ts = in.technique_searches[i];
      row.layouts_evaluated = ts.result.counts.evaluated;
      row.layouts_pruned = ts.result.counts.pruned;
      if (ts.searched && !ts.result.top.empty()) {
        row.any_layout_fits = true;
        row.layout = layout_label(ts.result.top.front().layout);
        pr = &ts.pred;
        pl = &ts.plan;
      }
    }
    row.layout_brief = spec::summary_line(*pl, spec::SummaryGroup::kLayout) + " " + spec::summary_of(*pl, {"micro_batch"});
    row.status = std::string(engine::name(pr->status));
    row.step_time_s = pr->step.time_s;
    row.tokens_per_s = pr->step.tokens_per_s;
    row.mfu = pr->step.mfu;
    row.hfu = pr->step.hfu;
    row.peak_memory_bytes = pr->memory.total;
    row.speedup = r.speedup;
    row.memory_saved_bytes = r.memory_saved;
    if (v.techniques_searched && !in.compare_rows.empty()) {
      // Against the first row as it is shown (its own best layout, when it has one).
      const auto& first = in.technique_searches[0];
      const engine::Prediction& base = first.searched && !first.result.top.empty() ? first.pred : in.compare_rows[0].pred;
      row.speedup = row.step_time_s > 0 ? base.step.time_s / row.step_time_s : 0;
      row.memory_saved_bytes = base.memory.total - row.peak_memory_bytes;
    }
    row.fits = pr->memory.fits && (!v.techniques_searched || row.any_layout_fits);
    const auto& mm = pr->memory;
    row.memory = mm;
    row.interval = intervals.run_interval(uncertainty::traits_of(*pr, *pl, hw), in.interval_level);
    row.step_time_range = time_range(row.interval, row.step_time_s);
    row.memory_range = uncertainty::memory_interval(mm);
    if (row.fits && pr->status == engine::Status::kOk && (v.best_technique < 0 || row.step_time_s < best_time)) {
      v.best_technique = static_cast<int>(i);
      best_time = row.step_time_s;
    }
    v.techniques.push_back(std::move(row));
  }
  if (v.best_technique >= 0) v.techniques[v.best_technique].best = true;

  auto& lf = v.layouts;
  lf.present = in.searched;
  if (in.searched) {
    lf.gpus = in.search_spec.gpus;
    lf.global_batch = in.search_spec.global_batch;
    lf.objective = search::to_string(in.search_spec.objective);
    lf.counts = in.search.counts;
    int rank = 0;
    for (const auto& c : in.search.top) {
      lf.top.push_back(layout_row(c, ++rank, hw.has_price()));
      const size_t i = lf.top.size() - 1;
      set_layout_interval(lf.top.back(), i < in.top_traits.size() ? &in.top_traits[i] : nullptr, intervals,
                          in.interval_level);
    }
    for (const auto& run : in.scaling) {
      ScalingPoint p;
      p.gpus = run.gpus;
      p.chosen = run.gpus == in.search_spec.gpus;
      p.feasible = !run.result.top.empty();
      if (p.feasible) {
        p.best = layout_row(run.result.top.front(), 1, hw.has_price());
        set_layout_interval(p.best, run.best_traits ? &*run.best_traits : nullptr, intervals, in.interval_level);
      }
      lf.scaling.push_back(std::move(p));
    }
  }

  v.sizing = make_sizing(in, a, pred.params.total);
  v.roofline = make_roofline(in);
  v.time_by_class = shares(pred.time_by_class.data(), spec::kKernelClassCount, class_label);
  v.time_by_phase = shares(pred.time_by_phase.data(), spec::kPhaseCount, phase_label);
  v.step = make_step_spent(pred, in.plan);
  v.headroom_frac = in.headroom_frac;
  v.settings = in.settings;
  v.assumptions = make_assumptions(in, v);
  return v;
}

namespace {

json layout_json(const LayoutRow& r) {
  return {{"rank", r.rank},
          {"label", r.label},
          {"tp", r.tp},
          {"pp", r.pp},
          {"dp", r.dp},
          {"cp", r.cp},
          {"micro_batch", r.micro_batch},
          {"vpp", r.vpp},
          {"zero", r.zero},
          {"sp", r.sp},
          {"recompute", r.recompute},
          {"precision", r.precision},
          {"step_time_s", json_number(r.step_time_s)},
          {"mfu", json_number(r.mfu)},
          {"hfu", json_number(r.hfu)},
          {"memory_bytes", whole_json(r.memory_bytes)},
          {"tokens_per_s", json_number(r.tokens_per_s)},
          {"bubble_fraction", json_number(r.bubble_fraction)},
          {"exposed_comm_s", json_number(r.exposed_comm_s)},
          {"days", json_number(r.days)},
          {"gpu_hours", json_number(r.gpu_hours)},
          {"cost_usd", json_number(r.cost_usd)},
          {"step_time_s_interval", range_json(r.step_time_range)},
          {"mfu_interval", range_json(r.mfu_range)},
          {"days_interval", range_json(r.days_range)},
          {"cost_usd_interval", range_json(r.cost_range)},
          {"interval", interval_json(r.interval)}};
}

/// Peak memory's range (as `key`) and whether it fits at its upper end.
void add_memory_range(json& j, const uncertainty::MemoryInterval& m, const char* key, bool with_basis) {
  j[key] = json::array({whole_json(m.lo), whole_json(m.hi)});
  j["fits_at_upper_bound"] = m.fits_high;
  if (with_basis) j["interval_basis"] = m.basis;
}

}  // namespace

json capacity_json(const CapacityView& v) {
  json j;
  j["schema"] = "ridgeline.capacity/1";
  j["title"] = v.title;
  j["command"] = v.command;
  j["version"] = v.version;
  j["interval_level"] = json_number(v.interval_level);
  j["settings"] = v.settings;

  json gpu = {{"id", v.gpu.id},
              {"name", v.gpu.name},
              {"architecture", v.gpu.architecture},
              {"memory_bytes", whole_json(v.gpu.memory_bytes)},
              {"hbm_bytes_per_s", json_number(v.gpu.hbm_bytes_per_s)},
              {"price_per_gpu_hour_usd", json_number(v.gpu.price_per_gpu_hour_usd)},
              {"tdp_w", json_number(v.gpu.tdp_w)},
              {"source_file", v.gpu.source_file}};
  gpu["peak_flop_per_s"] = json::object();
  for (const auto& [p, f] : v.gpu.peaks) gpu["peak_flop_per_s"][p] = json_number(f);
  gpu["sources"] = json::object();
  for (const auto& s : v.gpu.sources) gpu["sources"][s.field] = s.text;
  json cal = {{"present", v.calibration.present}, {"used", v.calibration.used}, {"status", v.calibration.status}};
  if (v.calibration.present) {
    cal["measurements"] = v.calibration.measurements;
    cal["device"] = v.calibration.device;
    cal["date"] = v.calibration.date;
    cal["residuals"] = json::array();
    for (const auto& r : v.calibration.residuals)
      cal["residuals"].push_back({{"class", r.cls}, {"records", r.records}, {"median_abs_pct", json_number(r.median_abs_pct)},
                                  {"p90_abs_pct", json_number(r.p90_abs_pct)}});
  }
  const auto& mf = v.model;
  json model = {{"id", mf.id},           {"name", mf.name},
                {"source_file", mf.source_file}, {"params", whole_json(mf.params)},
                {"active_params", whole_json(mf.active_params)}, {"trainable_params", whole_json(mf.trainable_params)},
                {"layers", mf.layers},   {"hidden", mf.hidden},
                {"heads", mf.heads},     {"kv_heads", mf.kv_heads},
                {"ffn_hidden", mf.ffn_hidden}, {"vocab", mf.vocab},
                {"architecture", mf.architecture}};
  json plan = {{"summary", v.plan.summary},
               {"framework", {{"id", v.plan.framework_id}, {"name", v.plan.framework_name}}},
               {"settings", v.plan.plan},
               {"gpus", v.plan.gpus},               {"micro_batch", v.plan.micro_batch},
               {"global_batch", v.plan.global_batch}, {"seq_len", v.plan.seq_len},
               {"tokens", json_number(v.plan.tokens)},       {"tokens_source", v.plan.tokens_source}};
  j["question"] = {{"gpu", gpu}, {"calibration", cal}, {"model", model}, {"plan", plan}};
  if (v.calibration.runs_given) j["calibration"] = v.calibration.runs_json;

  const auto& a = v.answer;
  const auto& m = a.memory;
  j["answer"] = {{"status", a.status},
                 {"step_time_s", json_number(a.step_time_s)},
                 {"tokens_per_s", json_number(a.tokens_per_s)},
                 {"tokens_per_s_per_gpu", json_number(a.tokens_per_s_per_gpu)},
                 {"mfu", json_number(a.mfu)},
                 {"mfu_dtype", json_number(a.mfu_dtype)},
                 {"precision", a.precision},
                 {"hfu", json_number(a.hfu)},
                 {"model_flops_per_step", json_number(a.model_flops_per_step)},
                 {"achieved_flop_per_s_per_gpu", json_number(a.achieved_flop_per_s_per_gpu)},
                 {"compute_time_s", json_number(a.compute_time_s)},
                 {"exposed_comm_s", json_number(a.exposed_comm_s)},
                 {"bubble_s", json_number(a.bubble_s)},
                 {"bubble_fraction", json_number(a.bubble_fraction)},
                 {"host_s", json_number(a.host_s)},
                 {"host_bound", a.host_bound},
                 {"comm_slowdown_s", json_number(a.comm_slowdown_s)},
                 {"micro_batches", json_number(a.micro_batches)},
                 {"flops_convention", a.flops_convention},
                 {"memory", [&] {
                    json mj = memory_json(m);
                    mj.update({{"total_bytes", whole_json(m.total)},
                               {"capacity_bytes", whole_json(m.capacity)},
                               {"fits", m.fits},
                               {"allocated_bytes", whole_json(m.allocated)},
                               {"reserved_bytes", whole_json(m.reserved)},
                               {"allocator_reserve", json_number(m.allocator_reserve)},
                               {"peak_stage", std::string(m.peak_stage)}});
                    add_memory_range(mj, a.memory_range, "total_bytes_interval", true);
                    if (m.peak_stage != "only") {
                      mj["first_stage"] = stage_json(a.first_stage);
                      mj["last_stage"] = stage_json(a.last_stage);
                    }
                    return mj;
                  }()},
                 {"memory_fraction", json_number(a.memory_fraction)},
                 {"tokens_per_step", json_number(a.tokens_per_step)},
                 {"tokens", json_number(a.tokens)},
                 {"steps", json_number(a.steps)},
                 {"days", json_number(a.days)},
                 {"ideal_days", json_number(a.ideal_days)},
                 {"goodput", json_number(a.goodput)},
                 {"gpu_hours", json_number(a.gpu_hours)},
                 {"cost_usd", json_number(a.cost_usd)},
                 {"energy_kwh", json_number(a.energy_kwh)},
                 {"interval", interval_json(a.interval)},
                 {"step_time_s_interval", range_json(a.step_time_range)},
                 {"tokens_per_s_interval", range_json(a.tokens_per_s_range)},
                 {"mfu_interval", range_json(a.mfu_range)},
                 {"tokens_interval", range_json(a.tokens_range)},
                 {"days_interval", range_json(a.days_range)},
                 {"gpu_hours_interval", range_json(a.gpu_hours_range)},
                 {"cost_usd_interval", range_json(a.cost_range)},
                 {"energy_kwh_interval", range_json(a.energy_range)}};

  json tech = {{"vary", v.vary_keys},
               {"best_index", v.best_technique},
               {"searched", v.techniques_searched},
               {"rows", json::array()}};
  for (const auto& r : v.techniques) {
    json e = {{"label", r.label},
              {"status", r.status},
              {"step_time_s", json_number(r.step_time_s)},
              {"tokens_per_s", json_number(r.tokens_per_s)},
              {"mfu", json_number(r.mfu)},
              {"hfu", json_number(r.hfu)},
              {"peak_memory_bytes", whole_json(r.peak_memory_bytes)},
              {"speedup", json_number(r.speedup)},
              {"memory_saved_bytes", whole_json(r.memory_saved_bytes)},
              {"fits", r.fits},
              {"best", r.best},
              {"layout", r.layout.empty() ? json(nullptr) : json(r.layout)},
              {"layout_brief", r.layout_brief},
              {"any_layout_fits", r.any_layout_fits},
              {"layouts_evaluated", r.layouts_evaluated},
              {"layouts_pruned", r.layouts_pruned},
              {"memory", memory_json(r.memory)},
              {"step_time_s_interval", range_json(r.step_time_range)},
              {"interval", interval_json(r.interval)}};
    add_memory_range(e, r.memory_range, "peak_memory_bytes_interval", false);
    for (size_t k = 0; k < r.settings.size() && k < v.vary_keys.size(); ++k) e["settings"][v.vary_keys[k]] = r.settings[k];
    tech["rows"].push_back(std::move(e));
  }
  j["techniques"] = std::move(tech);

  if (v.layouts.present) {
    const auto& l = v.layouts;
    json lj = {{"gpus", l.gpus},
               {"global_batch", l.global_batch},
               {"objective", l.objective},
               {"counts",
                {{"enumerated", l.counts.enumerated}, {"pruned", l.counts.pruned}, {"evaluated", l.counts.evaluated},
                 {"infeasible", l.counts.infeasible}, {"graphs", l.counts.graphs}}},
               {"top", json::array()},
               {"scaling", json::array()}};
    for (const auto& r : l.top) lj["top"].push_back(layout_json(r));
    for (const auto& p : l.scaling) {
      json e = {{"gpus", p.gpus}, {"feasible", p.feasible}, {"chosen", p.chosen}};
      if (p.feasible) e["best"] = layout_json(p.best);
      lj["scaling"].push_back(std::move(e));
    }
    j["layouts"] = std::move(lj);
  } else {
    j["layouts"] = nullptr;
  }

  if (v.sizing.present) {
    const auto& s = v.sizing;
    j["sizing"] = {{"budget_kind", s.budget_kind},
                   {"budget_value", json_number(s.budget_value)},
                   {"gpu_hours", json_number(s.gpu_hours)},
                   {"achieved_flop_per_s_per_gpu", json_number(s.achieved_flop_per_s_per_gpu)},
                   {"compute_flop", json_number(s.compute_flop)},
                   {"optimal_params", whole_json(s.optimal_params)},
                   {"optimal_tokens", json_number(s.optimal_tokens)},
                   {"model_params", whole_json(s.model_params)},
                   {"model_tokens", json_number(s.model_tokens)},
                   {"model_tokens_per_param", json_number(s.model_tokens_per_param)},
                   {"params_ratio", json_number(s.params_ratio)},
                   {"verdict", s.verdict}};
  } else {
    j["sizing"] = nullptr;
  }

  const auto& R = v.roofline;
  json roof = {{"hbm_bytes_per_s", json_number(R.hbm_bytes_per_s)},
               {"omitted", R.omitted},
               {"boost_clock_hz", json_number(R.boost_clock_hz)},
               {"clock_hz", json_number(R.clock_hz)},
               {"clock_ratio", json_number(R.clock_ratio)},
               {"training_clock_frac", json_number(R.training_clock_frac)},
               {"clock_scale", json_number(R.clock_scale)},
               {"roofs", json::array()},
               {"points", json::array()}};
  for (const auto& r : R.roofs)
    roof["roofs"].push_back({{"precision", r.precision}, {"peak_flop_per_s", json_number(r.peak_flop_per_s)},
                             {"spec_peak_flop_per_s", json_number(r.spec_peak_flop_per_s)},
                             {"ridge_intensity", json_number(r.ridge_intensity)}});
  for (const auto& p : v.roofline.points)
    roof["points"].push_back({{"name", p.name},
                              {"phase", p.phase},
                              {"class", p.cls},
                              {"dtype", p.dtype},
                              {"bound", p.bound},
                              {"intensity", json_number(p.intensity)},
                              {"flop_per_s", json_number(p.flop_per_s)},
                              {"time_s", json_number(p.time_s)},
                              {"share", json_number(p.share)},
                              {"hbm_bytes", whole_json(p.hbm_bytes)},
                              {"flops", json_number(p.flops)},
                              {"count", json_number(p.count)}});
  j["roofline"] = std::move(roof);
  auto share_json = [](const std::vector<TimeShare>& v) {
    json arr = json::array();
    for (const auto& s : v) arr.push_back({{"name", s.name}, {"time_s", json_number(s.time_s)}, {"share", json_number(s.share)}});
    return arr;
  };
  json step = {{"step_time_s", json_number(v.step.step_time_s)},
               {"comm_total_s", json_number(v.step.comm_total_s)},
               {"comm_exposed_s", json_number(v.step.comm_exposed_s)},
               {"comm_hidden_s", json_number(v.step.comm_hidden_s)},
               {"comm_hidden_share", json_number(v.step.comm_hidden_share)},
               {"comm_exposed_share", json_number(v.step.comm_exposed_share)},
               {"parts", json::array()}};
  for (const auto& p : v.step.parts)
    step["parts"].push_back({{"name", p.name}, {"kind", p.kind}, {"time_s", json_number(p.time_s)}, {"share", json_number(p.share)}});
  j["time_breakdown"] = {{"step", std::move(step)},
                         {"by_class", share_json(v.time_by_class)},
                         {"by_phase", share_json(v.time_by_phase)}};
  j["answer"]["memory"]["headroom_fraction"] = json_number(v.headroom_frac);
  j["assumptions"] = json::array();
  for (const auto& x : v.assumptions) j["assumptions"].push_back({{"name", x.name}, {"value", x.value}, {"source", x.source}});
  return j;
}

}  // namespace ridgeline::report
