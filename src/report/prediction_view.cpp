#include "ridgeline/report/prediction_view.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "ridgeline/report/capacity_text.hpp"
#include "ridgeline/report/capacity_view.hpp"
#include "ridgeline/report/json_number.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/plan_fields.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::report {

using nlohmann::json;
using namespace ridgeline::units;

namespace {

std::string pad(std::string s, size_t w, bool right = false) {
  if (s.size() >= w) return s;
  return right ? std::string(w - s.size(), ' ') + s : s + std::string(w - s.size(), ' ');
}

const uncertainty::IntervalModel& model_of(const Inputs& in) {
  return in.intervals ? *in.intervals : uncertainty::shipped();
}

/// [lo, hi] of a range; null when there is none.
json range_json(const Range& r) {
  if (!r.valid || !std::isfinite(r.lo) || !std::isfinite(r.hi)) return nullptr;
  return json::array({r.lo, r.hi});
}

/// Kernel intervals by (GEMM or attention, dtype): a step has hundreds of
/// kernels of a few kinds.
class KernelIntervals {
 public:
  KernelIntervals(const engine::Prediction& pred, const Inputs& in) : pred_(pred), in_(in) {}
  const uncertainty::Interval& of(const engine::KernelResult& k) {
    const int key = static_cast<int>(k.cls) * 256 + static_cast<int>(k.dtype);
    for (const auto& [kk, iv] : cache_)
      if (kk == key) return iv;
    cache_.emplace_back(key, kernel_interval(k, pred_, in_));
    return cache_.back().second;
  }

 private:
  const engine::Prediction& pred_;
  const Inputs& in_;
  std::vector<std::pair<int, uncertainty::Interval>> cache_;
};

}  // namespace

PredictionIntervals prediction_intervals(const engine::Prediction& pred, const Inputs& in) {
  PredictionIntervals r;
  r.memory = uncertainty::memory_interval(pred.memory);
  r.step.level = in.interval_level;
  if (pred.status == engine::Status::kInvalid) {
    r.step.note = "no interval for an invalid plan";
  } else if (!in.gpu || !in.plan) {
    r.step.note = "no interval without the GPU and the plan";
  } else {
    r.step = model_of(in).run_interval(uncertainty::traits_of(pred, *in.plan, *in.gpu), in.interval_level);
  }
  return r;
}

uncertainty::Interval kernel_interval(const engine::KernelResult& k, const engine::Prediction& pred, const Inputs& in) {
  uncertainty::Interval none;
  none.level = in.interval_level;
  const bool gemm = k.cls == spec::KernelClass::kGemm, attention = k.cls == spec::KernelClass::kAttention;
  if (!in.gpu || !(gemm || attention)) {
    none.note = "kernel intervals are drawn for GEMM and attention kernels only";
    return none;
  }
  uncertainty::KernelTraits t;
  t.kind = gemm ? uncertainty::KernelKind::kGemm : uncertainty::KernelKind::kAttention;
  t.generation = in.gpu->generation;
  t.dtype = k.dtype;
  if (pred.calibrated && in.gpu->calibration.present) t.calibration = &in.gpu->calibration;
  return model_of(in).kernel_interval(t, in.interval_level);
}

json whole_json(double v) { return std::isfinite(v) ? json(static_cast<long long>(std::llround(v))) : json(nullptr); }

namespace {

json whole(double v) { return whole_json(v); }

/// [lo, hi] of whole bytes; null when there is none.
json whole_pair(double lo, double hi) {
  if (!std::isfinite(lo) || !std::isfinite(hi)) return nullptr;
  return json::array({whole(lo), whole(hi)});
}

/// "989 TFLOP/s": a dense peak in TFLOP/s, whole, as spec sheets quote it.
std::string peak_text(double flop_per_s) { return fmt::format("{:.0f} TFLOP/s", flop_per_s / kTera); }

/// "1 micro-batch", "8 micro-batches".
std::string micro_batches_text(double n) {
  return fmt::format("{:.0f} {}", n, std::llround(n) == 1 ? "micro-batch" : "micro-batches");
}

std::vector<const engine::KernelResult*> by_time(const engine::Prediction& pred) {
  std::vector<const engine::KernelResult*> ks;
  for (const auto& k : pred.kernels) ks.push_back(&k);
  std::stable_sort(ks.begin(), ks.end(), [](auto* a, auto* b) { return a->time_s > b->time_s; });
  return ks;
}

/// Whole optimizer steps of a run: the last, partial step is a step.
double whole_steps(double steps) { return std::isfinite(steps) ? std::ceil(steps - 1e-9) : steps; }

}  // namespace

MfuPeaks mfu_peaks(const engine::Prediction& pred, const Inputs& in) {
  MfuPeaks r;
  r.precision = in.plan ? spec::to_string(in.plan->precision) : "bf16";
  r.bf16_flop_per_s = in.gpu ? in.gpu->peak(spec::Peak::kBf16) : 0;
  // The engine's mfu_dtype = model FLOPs / (time x GPUs x precision peak), so
  // the precision's peak = bf16 peak x mfu / mfu_dtype.
  const auto& s = pred.step;
  r.precision_flop_per_s = s.mfu_dtype > 0 ? r.bf16_flop_per_s * s.mfu / s.mfu_dtype : r.bf16_flop_per_s;
  r.other = r.precision != "bf16";
  return r;
}

json memory_json(const memory::MemoryResult& m) {
  json j = json::object();
  for (const auto& c : memory::kMemoryCategories) j[std::string(c.json_key)] = whole(m.*c.bytes);
  return j;
}

memory::MemoryResult stage_memory(const memory::MemoryResult& m, const memory::StageMemory& s) {
  memory::MemoryResult r;
  r.allocator_reserve = m.allocator_reserve;
  memory::set_stage(r, s);
  r.workspace = m.workspace;
  r.total = s.total;
  r.capacity = m.capacity;
  r.fits = s.total <= m.capacity;
  r.in_flight_microbatches = s.in_flight_microbatches;
  return r;
}

json stage_json(const memory::MemoryResult& r) {
  json j = memory_json(r);
  j.update({{"total_bytes", whole(r.total)},
            {"allocated_bytes", whole(r.allocated)},
            {"reserved_bytes", whole(r.reserved)},
            {"in_flight_microbatches", whole(r.in_flight_microbatches)}});
  return j;
}

json interval_json(const uncertainty::Interval& iv) {
  json j = {{"level", json_number(iv.level)},
            {"pool", iv.pool},
            {"rows", iv.rows},
            {"fallback", iv.fallback},
            {"note", iv.note},
            {"widened", iv.widened},
            {"calibrated", iv.calibrated},
            {"calibration_note", iv.calibration_note},
            {"held_out_covered", json_number(iv.held_out_covered)},
            {"held_out_rows", iv.held_out_rows}};
  if (iv.anchored) j["anchored"] = true;
  return j;
}

json plan_json(const spec::PlanSpec& p, const spec::ModelSpec& m) {
  // Every field that applies to this plan, at its YAML path, so the object
  // reads back as a plan file (but for parallel.vpp, the YAML's
  // parallel.virtual_stages: the name every schema uses); then the resolved
  // defaults.
  json j = json::object();
  for (const auto& f : spec::plan_fields()) {
    if (!spec::applies(f, p)) continue;
    json* at = &j;
    std::string_view key = f.key == "parallel.virtual_stages" ? std::string_view("parallel.vpp") : f.key;
    for (auto dot = key.find('.'); dot != std::string_view::npos; dot = key.find('.')) {
      at = &(*at)[std::string(key.substr(0, dot))];
      key.remove_prefix(dot + 1);
    }
    auto& q = const_cast<spec::PlanSpec&>(p);
    json& v = (*at)[std::string(key)];
    switch (f.type) {
      case spec::FieldType::kInt: v = f.int_ref(q); break;
      case spec::FieldType::kBool: v = f.bool_ref(q); break;
      case spec::FieldType::kNumber: v = json_number(f.num_ref(q)); break;
      case spec::FieldType::kQuantity:
        v = f.dim == units::Dimension::kCount ? json(json_number(f.num_ref(q))) : json(spec::field_text(f, p));
        break;
      case spec::FieldType::kWord: v = f.word(p); break;
    }
  }
  j["global_batch"] = p.effective_global_batch();
  j["seq_len"] = graph::seq_len(m, p);
  if (p.tokens <= 0) j.erase("tokens");
  j["parallel"]["gpus"] = p.parallel.gpus();
  return j;
}

json prediction_json(const engine::Prediction& pred, const Inputs& in, int top_kernels) {
  json j;
  j["schema"] = "ridgeline.prediction/2";
  j["status"] = std::string(engine::name(pred.status));
  if (pred.status == engine::Status::kInvalid) {
    j["problem"] = {{"field", pred.problem.field}, {"message", pred.problem.message}};
    return j;
  }
  // memory::fit, the one rule predict's table, compare, search and advise
  // use: "yes" (the memory interval's upper end leaves the default headroom
  // free), "tight" (only the point estimate fits), "no".
  j["fits"] = std::string(memory::fit_word(memory::fit(pred.memory)));
  if (in.gpu)
    j["gpu"] = {{"id", in.gpu->id}, {"name", in.gpu->name}, {"calibrated", pred.calibrated},
                {"memory_bytes", whole(in.gpu->memory_bytes)},
                {"peak_bf16_flop_per_s", json_number(in.gpu->peak(spec::Peak::kBf16))},
                {"hbm_bytes_per_s", json_number(in.gpu->hbm_bytes_per_s)}};
  if (in.model)
    j["model"] = {{"id", in.model->id}, {"name", in.model->name}, {"params", whole(pred.params.total)},
                  {"active_params", whole(pred.params.active)}, {"trainable_params", whole(pred.trainable_params)},
                  {"layers", in.model->layers}, {"hidden", in.model->hidden}};
  if (in.plan && in.model) j["plan"] = plan_json(*in.plan, *in.model);
  if (in.calibration && in.gpu && in.plan)
    j["calibration"] = calibration_json(calibration_use(in.calibration, *in.gpu, *in.plan));
  const auto& s = pred.step;
  const MfuPeaks peaks = mfu_peaks(pred, in);
  j["step"] = {{"step_time_s", json_number(s.time_s)},
               {"tokens_per_step", json_number(s.tokens_per_step)},
               {"tokens_per_s", json_number(s.tokens_per_s)},
               {"tokens_per_s_per_gpu", json_number(s.tokens_per_s / std::max(1LL, s.gpus))},
               {"mfu", json_number(s.mfu)},
               {"mfu_dtype", json_number(s.mfu_dtype)},
               {"mfu_precision", peaks.precision},
               {"precision_peak_flop_per_s", json_number(peaks.precision_flop_per_s)},
               {"hfu", json_number(s.hfu)},
               {"model_flops", json_number(s.model_flops)},
               {"recompute_flops", json_number(s.recompute_flops)},
               {"hardware_flops", json_number(s.hardware_flops)},
               {"flops_convention", s.flops_convention},
               {"micro_batches", whole(s.micro_batches)},
               {"microbatch_time_s", json_number(s.microbatch_time_s)},
               {"compute_time_s", json_number(s.compute_time_s)},
               {"exposed_comm_s", json_number(s.exposed_comm_s)},
               {"bubble_s", json_number(s.bubble_s)},
               {"bubble_fraction", json_number(s.bubble_fraction)},
               {"bubble_share_of_step", json_number(s.time_s > 0 ? s.bubble_s / s.time_s : 0.0)},
               {"optimizer_s", json_number(s.optimizer_s)},
               {"host_s", json_number(s.host_s)},
               {"host_bound", s.host_bound},
               {"comm_slowdown_s", json_number(s.comm_slowdown_s)},
               {"gpus", s.gpus}};
  // The MoE dispatch and combine (present under EP).
  if (s.all_to_all_s > 0) j["step"]["all_to_all_s"] = json_number(s.all_to_all_s);
  // CPU offload (techniques::offload_cost), present when the plan offloads.
  if (const auto& o = s.offload; o.cpu_params > 0 || o.param_fetch_bytes > 0 || o.paged_bytes > 0 ||
                                  o.activation_bytes > 0)
    j["step"]["offload"] = {{"cpu_params", whole(o.cpu_params)},
                            {"paged_bytes", whole(o.paged_bytes)},
                            {"paged_s", json_number(o.paged_s)},
                            {"activation_bytes", whole(o.activation_bytes)},
                            {"activation_s", json_number(o.activation_s)},
                            {"grad_d2h_bytes", whole(o.grad_d2h_bytes)},
                            {"param_h2d_bytes", whole(o.param_h2d_bytes)},
                            {"param_fetch_bytes", whole(o.param_fetch_bytes)},
                            {"grad_d2h_s", json_number(o.grad_d2h_s)},
                            {"param_h2d_s", json_number(o.param_h2d_s)},
                            {"param_fetch_s", json_number(o.param_fetch_s)},
                            {"cpu_optimizer_s", json_number(o.cpu_optimizer_s)},
                            {"hidden_s", json_number(o.hidden_s)},
                            {"exposed_s", json_number(o.exposed_s)}};
  const PredictionIntervals iv = prediction_intervals(pred, in);
  j["step"]["step_time_s_interval"] = range_json(time_range(iv.step, s.time_s));
  j["step"]["tokens_per_s_interval"] = range_json(rate_range(iv.step, s.tokens_per_s));
  j["step"]["mfu_interval"] = range_json(rate_range(iv.step, s.mfu));
  j["step"]["mfu_dtype_interval"] = range_json(rate_range(iv.step, s.mfu_dtype));
  j["interval"] = interval_json(iv.step);
  const auto& m = pred.memory;
  j["memory"] = memory_json(m);
  j["memory"].update({{"peak_memory_bytes", whole(m.total)},
                      {"capacity_bytes", whole(m.capacity)},
                      {"fits", m.fits},
                      {"allocated_bytes", whole(m.allocated)},
                      {"reserved_bytes", whole(m.reserved)},
                      {"allocator_reserve", json_number(m.allocator_reserve)},
                      {"peak_stage", std::string(m.peak_stage)},
                      {"peak_phase", std::string(m.peak_phase)},
                      {"activations_per_layer_bytes", whole(m.activations_per_layer)},
                      {"in_flight_microbatches", whole(m.in_flight_microbatches)},
                      {"cp_kv_buffers_bytes", whole(m.cp_kv_buffers)},
                      {"peak_memory_bytes_interval", whole_pair(iv.memory.lo, iv.memory.hi)},
                      {"fits_at_upper_bound", iv.memory.fits_high},
                      {"interval_basis", iv.memory.basis}});
  // CPU offload: the model state in host memory per GPU, present when the plan offloads.
  if (m.host_bytes > 0)
    j["memory"].update({{"host_bytes", whole(m.host_bytes)},
                        {"host_capacity_bytes", whole(m.host_capacity)},
                        {"host_fits", m.host_fits}});
  if (m.offloaded_activations > 0) j["memory"]["offloaded_activations_bytes"] = whole(m.offloaded_activations);
  // Paged optimizer state (present when the plan pages it): outside peak_memory_bytes.
  if (m.paged_bytes > 0)
    j["memory"].update({{"paged_optimizer_bytes", whole(m.paged_bytes)},
                        {"paged_to_host_bytes", whole(m.paged_to_host)},
                        {"host_capacity_bytes", whole(m.host_capacity)},
                        {"host_fits", m.host_fits}});
  if (m.peak_stage != "only") {
    j["memory"]["first_stage"] = stage_json(stage_memory(m, m.first_stage));
    j["memory"]["last_stage"] = stage_json(stage_memory(m, m.last_stage));
  }
  const auto& t = pred.totals;
  // A profile without a price (or TDP) has an unknown cost (or energy): null, never 0.
  const bool priced = !in.gpu || in.gpu->has_price(), powered = !in.gpu || in.gpu->has_tdp();
  // A run that never completes (failures outpace recovery) has no wall
  // clock, GPU-hours, cost or energy: null, never inf.
  const bool done = t.completes;
  const auto when = [&](bool ok, double v) { return ok ? json_number(v) : json(nullptr); };
  const auto when_range = [&](bool ok, double v) { return ok ? range_json(time_range(iv.step, v)) : json(nullptr); };
  j["training"] = {{"tokens", json_number(t.tokens)},
                   {"tokens_source", std::string(engine::name(t.basis))},
                   {"steps", whole(whole_steps(t.steps))},
                   {"wall_clock_days", when(done, t.wall_s / 86400.0)},
                   {"ideal_wall_clock_days", json_number(t.ideal_wall_s / 86400.0)},
                   {"completes", done},
                   {"goodput", json_number(t.goodput)},
                   {"failure_rate_per_gpu_hour", json_number(t.failure_rate_per_gpu_hour)},
                   {"mtbf_s", when(t.mtbf_s > 0, t.mtbf_s)},
                   {"expected_failures", when(done, t.expected_failures)},
                   {"checkpoint_bytes", whole(t.checkpoint_bytes)},
                   {"checkpoint_bandwidth_bytes_per_s", json_number(t.checkpoint_bandwidth_bytes_per_s)},
                   {"checkpoint_write_s", json_number(t.checkpoint_write_s)},
                   {"checkpoint_interval_s", when(t.checkpoint_interval_s > 0, t.checkpoint_interval_s)},
                   {"restart_s", json_number(t.restart_s)},
                   {"gpu_hours", when(done, t.gpu_hours)},
                   {"cost_usd", when(priced && done, t.cost_usd)},
                   {"energy_kwh", when(powered && done, t.energy_kwh)},
                   {"power_utilization", when(powered, t.power_utilization)},
                   {"power_w", when(powered, t.power_w)},
                   {"power_source", t.power_given ? "plan" : "model"},
                   {"compute_bound_share", json_number(t.compute_bound_share)},
                   {"pue", json_number(t.pue)},
                   {"carbon_kg", when(powered && done && t.carbon_kg >= 0, t.carbon_kg)},
                   {"wall_clock_days_interval", when_range(done, t.wall_s / 86400.0)},
                   {"gpu_hours_interval", when_range(done, t.gpu_hours)},
                   {"cost_usd_interval", when_range(priced && done, t.cost_usd)},
                   {"energy_kwh_interval", when_range(powered && done, t.energy_kwh)}};
  if (in.micro_batch_max) {
    const auto& x = *in.micro_batch_max;
    j["micro_batch_max"] = {{"micro_batch", x.max},
                            {"next", x.next > 0 ? json(x.next) : json(nullptr)},
                            {"next_peak_memory_bytes", x.next_fits_not ? whole(x.next_peak_bytes) : json(nullptr)},
                            {"why", micro_batch_max_line(x)}};
  }
  json by_class = json::object(), by_phase = json::object();
  for (int i = 0; i < spec::kKernelClassCount; ++i)
    if (pred.time_by_class[i] > 0) by_class[std::string(spec::name(static_cast<spec::KernelClass>(i)))] = json_number(pred.time_by_class[i]);
  for (int i = 0; i < spec::kPhaseCount; ++i)
    if (pred.time_by_phase[i] > 0) by_phase[std::string(spec::name(static_cast<spec::Phase>(i)))] = json_number(pred.time_by_phase[i]);
  j["time_by_class_s"] = by_class;
  j["time_by_phase_s"] = by_phase;
  auto ks = by_time(pred);
  if (top_kernels >= 0 && static_cast<int>(ks.size()) > top_kernels) ks.resize(top_kernels);
  json karr = json::array();
  KernelIntervals kernel_iv(pred, in);
  for (const auto* k : ks) {
    json e = {{"name", std::string(k->name)},
              {"phase", std::string(spec::name(k->phase))},
              {"class", std::string(spec::name(k->cls))},
              {"dtype", std::string(spec::name(k->dtype))},
              {"count", whole(k->count)},
              {"flops", json_number(k->flops)},
              {"hbm_bytes", whole(k->hbm_bytes)},
              {"intensity", json_number(k->intensity)},
              {"bound", std::string(cost::name(k->bound))},
              {"time_s", json_number(k->time_s)},
              {"share", json_number(k->share)},
              {"time_s_interval", range_json(time_range(kernel_iv.of(*k), k->time_s))}};
    if (k->cls == spec::KernelClass::kGemm)
      e["gemm"] = {{"m", json_number(k->gemm.m)}, {"n", json_number(k->gemm.n)}, {"k", json_number(k->gemm.k)}, {"batch", json_number(k->gemm.batch)}};
    karr.push_back(std::move(e));
  }
  j["kernels"] = std::move(karr);
  return j;
}

std::string micro_batch_max_line(const MicroBatchMax& x) {
  std::string why;
  if (x.next <= 0) why = x.why;
  else if (x.next_fits_not)
    why = fmt::format("{} does not fit: needs {} of {}", x.next, format_bytes(x.next_peak_bytes),
                      format_bytes(x.capacity_bytes));
  else
    why = fmt::format("{}: {}", x.next, x.why);
  if (x.max <= 0) return fmt::format("micro-batch max: none ({})", why);
  return fmt::format("micro-batch max: {} ({})", x.max, why);
}

std::vector<SummaryLine> prediction_summary(const engine::Prediction& pred, const Inputs& in) {
  std::vector<SummaryLine> o;
  const auto line = [&](std::string label, std::string text) { o.push_back({std::move(label), std::move(text)}); };
  const auto& s = pred.step;
  const auto& m = pred.memory;
  const PredictionIntervals iv = prediction_intervals(pred, in);
  // "   80% interval 690–910 ms" after a figure; nothing without an interval.
  const auto within = [&](const Range& r, std::string (*format)(double)) {
    const std::string t = text::interval(iv.step, r, format);
    return t.empty() ? t : "   " + t;
  };
  // A calibrated stack scales the whole step (engine::finish_time); the parts below stay the model's.
  const spec::StackCorrection* stack = in.gpu && in.plan ? in.gpu->stack_for(in.plan->framework) : nullptr;
  line("step time", fmt::format("{}{}   ({} of {}{})", format_seconds(s.time_s),
                                within(time_range(iv.step, s.time_s), format_seconds),
                                micro_batches_text(s.micro_batches), format_seconds(s.microbatch_time_s),
                                stack ? fmt::format(", x {:.3f} calibrated on {} run{}", stack->time_scale,
                                                    stack->time_runs, stack->time_runs == 1 ? "" : "s")
                                      : std::string()));
  line("throughput", fmt::format("{} tokens/s{}   ({} tokens/s per GPU)", format_count(s.tokens_per_s),
                                 within(rate_range(iv.step, s.tokens_per_s), text::tokens_per_s),
                                 format_count(s.tokens_per_s / std::max(1LL, s.gpus))));
  // MFU against the peak of the precision the GEMMs run in first (never above
  // 100%), then against the dense bf16 peak, both named; a ratio to the bf16
  // peak above 1 (fp8 GEMMs run above it) is written as "1.12x", not "112%".
  const MfuPeaks peaks = mfu_peaks(pred, in);
  if (!peaks.other) {
    line("MFU", fmt::format("{} of the dense bf16 peak ({}){}   (attention FLOPs {})", format_percent(s.mfu),
                            peak_text(peaks.bf16_flop_per_s), within(rate_range(iv.step, s.mfu), format_percent),
                            s.flops_convention));
  } else {
    line("MFU", fmt::format("{} of the {} peak ({}){}", format_percent(s.mfu_dtype), peaks.precision,
                            peak_text(peaks.precision_flop_per_s),
                            within(rate_range(iv.step, s.mfu_dtype), format_percent)));
    line("", fmt::format("{} the dense bf16 peak ({}); attention FLOPs {}",
                         s.mfu < 1 ? format_percent(s.mfu) + " of" : fmt::format("{:.2f}x", s.mfu),
                         peak_text(peaks.bf16_flop_per_s), s.flops_convention));
  }
  line("interval", text::interval_source(iv.step));
  if (iv.step.fallback) line("", iv.step.note);
  if (!iv.step.widened.empty()) line("", iv.step.widened);
  if (iv.step.calibrated) line("", iv.step.calibration_note);
  line("HFU", fmt::format("{}   (model + recompute FLOPs, of the dense bf16 peak)", format_percent(s.hfu)));
  line("model FLOPs", fmt::format("{} per step", format_flops(s.model_flops)));
  if (s.exposed_comm_s > 0 || s.bubble_s > 0)
    line("exposed comm",
         format_seconds(s.exposed_comm_s) +
             (s.bubble_s > 0 ? fmt::format("   pipeline bubble {} ({} of the step)", format_seconds(s.bubble_s),
                                           format_percent(s.time_s > 0 ? s.bubble_s / s.time_s : 0.0))
                             : std::string()));
  if (s.all_to_all_s > 0)
    line("all-to-all", fmt::format("{} per step   (MoE dispatch and combine; what compute does not hide is in exposed "
                                   "comm)",
                                   format_seconds(s.all_to_all_s)));
  if (s.comm_slowdown_s > 0)
    line("comm SM contention", fmt::format("{}   (overlapped NCCL kernels take SMs from the GEMMs they overlap)",
                                           format_seconds(s.comm_slowdown_s)));
  if (s.host_bound)
    line("host dispatch", fmt::format("{} per step   (host-bound: the GPU waits for the framework's Python dispatch)",
                                      format_seconds(s.host_s)));
  else if (s.host_s > 0)
    line("host dispatch", fmt::format("{} per step, behind the kernels", format_seconds(s.host_s)));
  if (const auto& o = s.offload; o.cpu_params > 0 || o.param_fetch_bytes > 0 || o.activation_bytes > 0) {
    std::string parts;
    auto part = [&parts](const std::string& t) { parts += (parts.empty() ? "" : ", ") + t; };
    if (o.cpu_params > 0)
      part(fmt::format("CPU Adam {} ({} parameters)", format_seconds(o.cpu_optimizer_s), format_count(o.cpu_params)));
    if (o.param_h2d_bytes > 0)
      part(fmt::format("parameters to the GPU {} ({})", format_seconds(o.param_h2d_s), format_bytes(o.param_h2d_bytes)));
    if (o.grad_d2h_bytes > 0)
      part(fmt::format("gradients to the host {} ({})", format_seconds(o.grad_d2h_s), format_bytes(o.grad_d2h_bytes)));
    if (o.param_fetch_bytes > 0)
      part(fmt::format("parameter fetches {} ({})", format_seconds(o.param_fetch_s), format_bytes(o.param_fetch_bytes)));
    if (o.activation_bytes > 0)
      part(fmt::format("activations to the host and back {} ({})", format_seconds(o.activation_s),
                       format_bytes(o.activation_bytes)));
    line("CPU offload", fmt::format("{} per step exposed, {} behind forward and backward", format_seconds(o.exposed_s),
                                    format_seconds(o.hidden_s)));
    line("", parts);
  }
  line("peak memory",
       fmt::format("{} of {}   {}{}", format_bytes(m.total), format_bytes(m.capacity),
                   // memory::fit, the rule compare, search and advise use.
                   memory::fit(m) == memory::Fit::kFits    ? std::string("fits")
                   : memory::fit(m) == memory::Fit::kTight ? fmt::format("tight (the range's upper end is over {} of "
                                                                         "capacity; search and advise leave {} free)",
                                                                         format_percent(1 - memory::kDefaultHeadroom),
                                                                         format_percent(memory::kDefaultHeadroom))
                                                           : std::string("DOES NOT FIT"),
                   m.peak_stage == "only"
                       ? std::string()
                       : fmt::format("   (peak on the {} pipeline stage; first {}, last {})", m.peak_stage,
                                     format_bytes(m.first_stage.total), format_bytes(m.last_stage.total))));
  if (m.host_bytes > 0)
    line("host memory",
         fmt::format("{} of {} per GPU   {}   (offloaded {})", format_bytes(m.host_bytes), format_bytes(m.host_capacity),
                     m.host_fits ? "fits" : "DOES NOT FIT",
                     m.offloaded_activations <= 0 ? "model state"
                     : m.offloaded_activations < m.host_bytes
                         ? fmt::format("model state and {} of activations", format_bytes(m.offloaded_activations))
                         : std::string("activations")));
  if (m.paged_bytes > 0)
    line("paged optimizer",
         m.paged_to_host > 0
             ? fmt::format("{} of state in unified memory, outside the peak: {} beside the rest, {} on the host, in "
                           "and out over the host link every step ({})",
                           format_bytes(m.paged_bytes), format_bytes(m.paged_bytes - m.paged_to_host),
                           format_bytes(m.paged_to_host), format_seconds(pred.step.offload.paged_s))
             : fmt::format("{} of state in unified memory, outside the peak: all of it fits beside the rest",
                           format_bytes(m.paged_bytes)));
  line("memory range", fmt::format("{}   fits at the upper bound: {}",
                                   text::range(iv.memory.lo, iv.memory.hi, format_bytes),
                                   text::fits_at_upper_bound(iv.memory)));
  line("allocated", fmt::format("{}, reserved {}   ({} allocator reserve {})", format_bytes(m.allocated),
                                format_bytes(m.reserved),
                                in.plan ? spec::framework(in.plan->framework).id : std::string("framework"),
                                format_percent(m.allocator_reserve)));
  return o;
}

text::Table prediction_kernels(const engine::Prediction& pred, int top_kernels, bool wide) {
  text::Table t;
  t.head = {"kernel", "phase", "class", "count", "FLOPs", "bytes", "FLOP/B", "bound", "time", "share"};
  t.numeric = {false, false, false, true, true, true, true, false, true, true};
  int shown = 0;
  for (const auto* k : by_time(pred)) {
    if (top_kernels >= 0 && shown++ >= top_kernels) break;
    t.rows.push_back({std::string(k->name), std::string(spec::name(k->phase)), std::string(spec::name(k->cls)),
                      format_whole(k->count), format_flops(k->flops), format_bytes(k->hbm_bytes),
                      fmt::format("{:.1f}", k->intensity), std::string(cost::name(k->bound)),
                      format_seconds(k->time_s), format_percent(k->share)});
  }
  if (!wide) {
    constexpr size_t kIntensity = 6;  // "FLOP/B"
    t.head.erase(t.head.begin() + kIntensity);
    t.numeric.erase(t.numeric.begin() + kIntensity);
    for (auto& r : t.rows) r.erase(r.begin() + kIntensity);
  }
  return t;
}

text::Table prediction_memory(const engine::Prediction& pred) {
  const auto& m = pred.memory;
  text::Table t;
  t.head = {"per GPU", "size", "of capacity"};
  t.numeric = {false, true, true};
  const auto row = [&](std::string_view label, double v) {
    t.rows.push_back({std::string(label), format_bytes(v), format_percent(m.capacity > 0 ? v / m.capacity : 0)});
  };
  for (const auto& c : memory::kMemoryCategories) row(c.label, m.*c.bytes);
  row("total", m.total);
  t.rows.push_back({"capacity", format_bytes(m.capacity), "100.0%"});
  return t;
}

std::vector<std::string> training_lines(const engine::Prediction& pred, const Inputs& in) {
  const auto& t = pred.totals;
  const PredictionIntervals iv = prediction_intervals(pred, in);
  std::string what;
  switch (t.basis) {
    case engine::TokensBasis::kPlan: what = fmt::format("training run: {} tokens", format_count(t.tokens)); break;
    case engine::TokensBasis::kChinchilla:
      what = fmt::format("training run: {} tokens (Chinchilla: 20 per parameter; --tokens sets the run)",
                         format_count(t.tokens));
      break;
    case engine::TokensBasis::kPerBillion:
      what = "per 1B tokens (a fine-tune has no compute-optimal length: --tokens N or --dataset-tokens N for the run)";
      break;
    case engine::TokensBasis::kDataset:
      what = fmt::format("one epoch: {} tokens (--dataset-tokens)", format_count(t.tokens));
      break;
  }
  std::vector<std::string> o;
  const bool priced = !in.gpu || in.gpu->has_price(), powered = !in.gpu || in.gpu->has_tdp();
  const double steps = whole_steps(t.steps);
  const std::string steps_text = fmt::format("{} {}", format_whole(steps), std::llround(steps) == 1 ? "step" : "steps");
  if (!t.completes) {
    o.push_back(fmt::format("{} -> {}, never completes (ideal {}): the job fails every {} on average, sooner than "
                            "half a checkpoint segment ({}) plus a restart ({}) recover; lower --failure-rate or "
                            "--restart-time, or use fewer GPUs",
                            what, steps_text, format_duration(t.ideal_wall_s), format_duration(t.mtbf_s),
                            format_duration((t.checkpoint_interval_s + t.checkpoint_write_s) / 2),
                            format_duration(t.restart_s)));
    return o;
  }
  const std::string cost = priced ? text::usd(t.cost_usd) : "cost unknown (the profile has no price)";
  const std::string energy = powered ? format_count(t.energy_kwh) + " kWh" : "energy unknown (the profile has no TDP)";
  o.push_back(fmt::format("{} -> {}, {} (ideal {}), {} GPU-hours, {}, {}", what, steps_text,
                          format_duration(t.wall_s), format_duration(t.ideal_wall_s), format_count(t.gpu_hours), cost,
                          energy));
  if (iv.step.valid()) {
    const auto dollars = [](double c) { return text::usd(c); };
    const auto kwh = [](double e) { return format_count(e) + " kWh"; };
    const auto r = [&](double x, std::string (*format)(double)) {
      const Range q = time_range(iv.step, x);
      return text::range(q.lo, q.hi, format);
    };
    std::string tail;
    if (priced) tail += ", " + r(t.cost_usd, +dollars);
    if (powered) tail += ", " + r(t.energy_kwh, +kwh);
    o.push_back(fmt::format("{} interval: {}, {} GPU-hours{}", text::level(iv.step.level),
                            r(t.wall_s, format_duration), r(t.gpu_hours, format_count), tail));
  }
  // Goodput: what the checkpoints and interruptions cost.
  const std::string every =
      t.checkpoint_interval_s > 0 ? "every " + format_duration(t.checkpoint_interval_s) : "none (no failures)";
  const std::string mtbf = t.mtbf_s > 0 ? fmt::format("job MTBF {} ({:.3g} per GPU-hour)", format_duration(t.mtbf_s),
                                                      t.failure_rate_per_gpu_hour)
                                        : "no failures (--failure-rate 0)";
  o.push_back(fmt::format("goodput {}: checkpoint {} {} at {}, written in {}; {}, {:.1f} expected interruptions, "
                          "restart {} each",
                          format_percent(t.goodput), format_bytes(t.checkpoint_bytes), every,
                          format_byte_rate(t.checkpoint_bandwidth_bytes_per_s), format_duration(t.checkpoint_write_s),
                          mtbf, t.expected_failures, format_duration(t.restart_s)));
  if (powered && in.gpu) {
    const std::string basis =
        t.power_given ? fmt::format("{} of TDP {:.0f} W (plan power_utilization)", format_percent(t.power_utilization),
                                    in.gpu->tdp_w)
                      : fmt::format("idle {:.0f} W to TDP {:.0f} W by the step's compute-bound share, {}", t.idle_w,
                                    in.gpu->tdp_w, format_percent(t.compute_bound_share));
    std::string line = fmt::format("energy: {:.0f} W per GPU ({}), PUE {:g}: {} kWh", t.power_w, basis, t.pue,
                                   format_count(t.energy_kwh));
    if (t.carbon_kg >= 0)
      line += fmt::format(", {} kg CO2e at {:g} g/kWh", format_whole(t.carbon_kg),
                          in.plan ? in.plan->grid_carbon_g_per_kwh : 0.0);
    o.push_back(line);
  }
  return o;
}

std::string prediction_table(const engine::Prediction& pred, const Inputs& in, int top_kernels, bool wide) {
  std::string o;
  if (in.micro_batch_max) o += micro_batch_max_line(*in.micro_batch_max) + "\n";
  if (in.gpu && in.model && in.plan) {
    o += fmt::format("{} on {} x {}{}\n", in.model->name, in.plan->parallel.gpus(), in.gpu->name,
                     pred.calibrated ? " (calibrated)" : "");
    o += fmt::format("plan: micro-batch {}, global batch {}, sequence {}; {}\n", in.plan->micro_batch,
                     in.plan->effective_global_batch(),
                     graph::seq_len(*in.model, *in.plan), spec::plan_summary(*in.plan));
    if (in.calibration) o += calibration_line(calibration_use(in.calibration, *in.gpu, *in.plan)) + "\n";
    // How the step counts a model's multi-token prediction, said rather than
    // silent (graph::build_forward times it where its stage sets the pace).
    if (in.model->mtp_layers > 0) {
      const int n = in.model->mtp_layers;
      const auto& q = in.plan->parallel;
      const char* s = n == 1 ? "" : "s";
      if (q.pp <= 1)
        o += fmt::format("note: the step includes the model's MTP module{} (mtp_layers {}); its parameter count "
                         "leaves {} out\n", s, n, n == 1 ? "it" : "them");
      else if (const int last = spec::stage_layers(in.model->layers, q.pp, q.first_stage_layers,
                                                   q.last_stage_layers, q.pp - 1);
               spec::timed_mtp_layers(in.model->layers, n, q.pp, q.first_stage_layers, q.last_stage_layers) > 0)
        o += fmt::format("note: the MTP module{} (mtp_layers {}) make{} the last pipeline stage ({} layers) the "
                         "busiest: it sets the pace\n", s, n, n == 1 ? "s" : "", last);
      else
        o += fmt::format("note: the MTP module{} (mtp_layers {}) {} on the last pipeline stage ({} layers); a busier "
                         "stage sets the pace\n", s, n, n == 1 ? "is" : "are", last);
    }
  }
  if (pred.status == engine::Status::kInvalid) {
    o += fmt::format("invalid plan: {}: {}\n", pred.problem.field, pred.problem.message);
    return o;
  }
  o += "\n";
  // The label in a column wide enough for the longest ("comm SM contention").
  for (const auto& l : prediction_summary(pred, in)) o += "  " + pad(l.label, 19) + l.text + "\n";

  // --top 0: no kernel section at all, not an empty one.
  const text::Table k = prediction_kernels(pred, top_kernels, wide);
  if (!k.rows.empty()) {
    o += "\ntop kernels by time (per step)\n";
    const size_t kw[] = {26, 13, 11, 7, 12, 11, 8, 8, 10, 6};
    const auto krow = [&](const std::vector<std::string>& r) {
      std::string line = " ";
      for (size_t i = 0; i < r.size(); ++i) {
        line += ' ';
        line += pad(r[i], kw[i], k.numeric[i]);
      }
      return line + "\n";
    };
    o += krow(k.head);
    for (const auto& r : k.rows) o += krow(r);
  }

  o += "\nmemory per GPU\n";
  const text::Table mem = prediction_memory(pred);
  o += fmt::format("  {} {}  {}\n", pad("", 16), pad("", 11, true), mem.head[2]);
  for (const auto& r : mem.rows)
    o += fmt::format("  {} {}  {}\n", pad(r[0], 16), pad(r[1], 11, true), pad(r[2], mem.head[2].size(), true));
  const PredictionIntervals iv = prediction_intervals(pred, in);
  o += fmt::format("  range {}: {}\n", text::range(iv.memory.lo, iv.memory.hi, format_bytes), iv.memory.basis);
  const auto& mm = pred.memory;
  o += fmt::format("  peak {}\n", mm.peak_phase == "end" ? "at the backward's end: every gradient formed, the activations freed"
                                   : mm.peak_phase == "metrics"
                                       ? "in the training metrics after the backward: every gradient formed, the logits "
                                         "and a metric's fp32 copy of them"
                                   : mm.peak_phase == "layer"
                                       ? "in the backward's layers: the saved activations and any recomputed layer's"
                                       : "at the backward's start: the loss's and LM head's tensors beside the saved ones");
  o += "\n";
  const auto totals = training_lines(pred, in);
  for (size_t i = 0; i < totals.size(); ++i) o += (i == 0 ? "" : "  ") + totals[i] + "\n";
  return o;
}

namespace {

/// A CSV field: quoted when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}

std::string csv_num(double v) { return std::isfinite(v) ? fmt::format("{}", v) : ""; }

}  // namespace

std::string prediction_csv(const engine::Prediction& pred, const Inputs& in) {
  const auto& s = pred.step;
  const auto& m = pred.memory;
  const auto& t = pred.totals;
  const PredictionIntervals iv = prediction_intervals(pred, in);
  const Range time = time_range(iv.step, s.time_s);
  const MfuPeaks peaks = mfu_peaks(pred, in);
  const spec::PlanSpec plan = in.plan ? *in.plan : spec::PlanSpec{};
  const auto& q = plan.parallel;
  std::string o =
      "gpu,model,framework,tokens,step_time_s,tokens_per_s,mfu,peak_memory_bytes,fits,wall_clock_days,gpu_hours,"
      "cost_usd,energy_kwh,status,gpus,tp,pp,dp,cp,ep,vpp,sp,zero,micro_batch,global_batch,seq_len,precision,"
      "recompute,micro_batches,mfu_dtype,mfu_precision,hfu,capacity_bytes,step_time_lo_s,step_time_hi_s,"
      "tokens_source\n";
  const std::vector<std::string> f = {
      csv_field(in.gpu ? in.gpu->id : ""),
      csv_field(in.model ? in.model->id : ""),
      csv_field(spec::framework(plan.framework).id),
      csv_num(t.tokens),
      csv_num(s.time_s),
      csv_num(s.tokens_per_s),
      csv_num(s.mfu),
      fmt::format("{}", std::llround(m.total)),
      m.fits ? "true" : "false",
      t.completes ? csv_num(t.wall_s / 86400.0) : std::string(),
      t.completes ? csv_num(t.gpu_hours) : std::string(),
      (in.gpu && !in.gpu->has_price()) || !t.completes ? std::string() : csv_num(t.cost_usd),
      (in.gpu && !in.gpu->has_tdp()) || !t.completes ? std::string() : csv_num(t.energy_kwh),
      std::string(engine::name(pred.status)),
      fmt::format("{}", q.gpus()),
      fmt::format("{}", q.tp),
      fmt::format("{}", q.pp),
      fmt::format("{}", q.dp),
      fmt::format("{}", q.cp),
      fmt::format("{}", q.ep),
      fmt::format("{}", q.virtual_stages),
      q.sp ? "true" : "false",
      fmt::format("{}", q.zero),
      fmt::format("{}", plan.micro_batch),
      fmt::format("{}", plan.effective_global_batch()),
      in.model ? fmt::format("{}", graph::seq_len(*in.model, plan)) : std::string(),
      spec::to_string(plan.precision),
      csv_field(spec::to_string(plan.recompute)),
      fmt::format("{}", std::llround(s.micro_batches)),
      csv_num(s.mfu_dtype),
      peaks.precision,
      csv_num(s.hfu),
      fmt::format("{}", std::llround(m.capacity)),
      time.valid ? csv_num(time.lo) : "",
      time.valid ? csv_num(time.hi) : "",
      std::string(engine::name(t.basis))};
  for (size_t i = 0; i < f.size(); ++i) o += (i ? "," : "") + f[i];
  return o + "\n";
}

std::string kernels_csv(const engine::Prediction& pred, const Inputs& in) {
  std::string o = "name,phase,class,dtype,count,flops,hbm_bytes,intensity,bound,time_s,share,time_lo_s,time_hi_s\n";
  KernelIntervals kernel_iv(pred, in);
  for (const auto& k : pred.kernels) {
    const Range r = time_range(kernel_iv.of(k), k.time_s);
    o += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{}\n", k.name, spec::name(k.phase), spec::name(k.cls),
                     spec::name(k.dtype), std::llround(k.count), k.flops, std::llround(k.hbm_bytes), k.intensity,
                     cost::name(k.bound), k.time_s, k.share, r.valid ? fmt::format("{}", r.lo) : "",
                     r.valid ? fmt::format("{}", r.hi) : "");
  }
  return o;
}

}  // namespace ridgeline::report
