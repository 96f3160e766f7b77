#include "ridgeline/report/prediction_view.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "ridgeline/report/capacity_text.hpp"
#include "ridgeline/report/capacity_view.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/plan_fields.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::report {

using nlohmann::json;
using namespace ridgeline::units;

namespace {

/// JSON never carries NaN or infinity: non-finite values become null.
json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

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

json memory_json(const memory::MemoryResult& m) {
  json j = json::object();
  for (const auto& c : memory::kMemoryCategories) j[std::string(c.json_key)] = num(m.*c.bytes);
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
  j.update({{"total_bytes", num(r.total)},
            {"allocated_bytes", num(r.allocated)},
            {"reserved_bytes", num(r.reserved)},
            {"in_flight_microbatches", num(r.in_flight_microbatches)}});
  return j;
}

json plan_json(const spec::PlanSpec& p, const spec::ModelSpec& m) {
  // Every field that applies to this plan, at its YAML path, so the object
  // reads back as a plan file; then the resolved defaults.
  json j = json::object();
  for (const auto& f : spec::plan_fields()) {
    if (!spec::applies(f, p)) continue;
    json* at = &j;
    std::string_view key = f.key;
    for (auto dot = key.find('.'); dot != std::string_view::npos; dot = key.find('.')) {
      at = &(*at)[std::string(key.substr(0, dot))];
      key.remove_prefix(dot + 1);
    }
    auto& q = const_cast<spec::PlanSpec&>(p);
    json& v = (*at)[std::string(key)];
    switch (f.type) {
      case spec::FieldType::kInt: v = f.int_ref(q); break;
      case spec::FieldType::kBool: v = f.bool_ref(q); break;
      case spec::FieldType::kNumber: v = num(f.num_ref(q)); break;
      case spec::FieldType::kQuantity:
        v = f.dim == units::Dimension::kCount ? json(num(f.num_ref(q))) : json(spec::field_text(f, p));
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
  j["schema"] = "ridgeline.prediction/1";
  j["status"] = std::string(engine::name(pred.status));
  if (pred.status == engine::Status::kInvalid) {
    j["problem"] = {{"field", pred.problem.field}, {"message", pred.problem.message}};
    return j;
  }
  if (in.gpu)
    j["gpu"] = {{"id", in.gpu->id}, {"name", in.gpu->name}, {"calibrated", pred.calibrated},
                {"memory_bytes", num(in.gpu->memory_bytes)},
                {"peak_bf16_flop_per_s", num(in.gpu->peak(spec::Peak::kBf16))},
                {"hbm_bytes_per_s", num(in.gpu->hbm_bytes_per_s)}};
  if (in.model)
    j["model"] = {{"id", in.model->id}, {"name", in.model->name}, {"params", num(pred.params.total)},
                  {"active_params", num(pred.params.active)}, {"trainable_params", num(pred.trainable_params)},
                  {"layers", in.model->layers}, {"hidden", in.model->hidden}};
  if (in.plan && in.model) j["plan"] = plan_json(*in.plan, *in.model);
  const auto& s = pred.step;
  j["step"] = {{"time_s", num(s.time_s)},
               {"tokens_per_step", num(s.tokens_per_step)},
               {"tokens_per_s", num(s.tokens_per_s)},
               {"tokens_per_s_per_gpu", num(s.tokens_per_s / std::max(1LL, s.gpus))},
               {"mfu", num(s.mfu)},
               {"mfu_dtype", num(s.mfu_dtype)},
               {"hfu", num(s.hfu)},
               {"model_flops", num(s.model_flops)},
               {"recompute_flops", num(s.recompute_flops)},
               {"hardware_flops", num(s.hardware_flops)},
               {"flops_convention", s.flops_convention},
               {"micro_batches", num(s.micro_batches)},
               {"microbatch_time_s", num(s.microbatch_time_s)},
               {"compute_time_s", num(s.compute_time_s)},
               {"exposed_comm_s", num(s.exposed_comm_s)},
               {"bubble_s", num(s.bubble_s)},
               {"bubble_fraction", num(s.bubble_fraction)},
               {"optimizer_s", num(s.optimizer_s)},
               {"host_s", num(s.host_s)},
               {"host_bound", s.host_bound},
               {"comm_slowdown_s", num(s.comm_slowdown_s)},
               {"gpus", s.gpus}};
  const PredictionIntervals iv = prediction_intervals(pred, in);
  j["step"]["time_s_interval"] = range_json(time_range(iv.step, s.time_s));
  j["step"]["tokens_per_s_interval"] = range_json(rate_range(iv.step, s.tokens_per_s));
  j["step"]["mfu_interval"] = range_json(rate_range(iv.step, s.mfu));
  j["interval"] = {{"level", num(iv.step.level)},   {"pool", iv.step.pool},
                   {"rows", iv.step.rows},           {"fallback", iv.step.fallback},
                   {"note", iv.step.note},           {"calibrated", iv.step.calibrated},
                   {"calibration_note", iv.step.calibration_note}};
  const auto& m = pred.memory;
  j["memory"] = memory_json(m);
  j["memory"].update({{"total_bytes", num(m.total)},
                      {"capacity_bytes", num(m.capacity)},
                      {"fits", m.fits},
                      {"allocated_bytes", num(m.allocated)},
                      {"reserved_bytes", num(m.reserved)},
                      {"allocator_reserve", num(m.allocator_reserve)},
                      {"peak_stage", std::string(m.peak_stage)},
                      {"activations_per_layer_bytes", num(m.activations_per_layer)},
                      {"in_flight_microbatches", num(m.in_flight_microbatches)},
                      {"cp_kv_buffers_bytes", num(m.cp_kv_buffers)},
                      {"total_bytes_interval", json::array({num(iv.memory.lo), num(iv.memory.hi)})},
                      {"fits_at_upper_bound", iv.memory.fits_high},
                      {"interval_basis", iv.memory.basis}});
  if (m.peak_stage != "only") {
    j["memory"]["first_stage"] = stage_json(stage_memory(m, m.first_stage));
    j["memory"]["last_stage"] = stage_json(stage_memory(m, m.last_stage));
  }
  const auto& t = pred.totals;
  j["training"] = {{"tokens", num(t.tokens)},
                   {"tokens_source", t.tokens_default ? "chinchilla_20_per_param" : "plan"},
                   {"steps", num(t.steps)},
                   {"wall_clock_days", num(t.wall_s / 86400.0)},
                   {"gpu_hours", num(t.gpu_hours)},
                   {"cost_usd", num(t.cost_usd)},
                   {"energy_kwh", num(t.energy_kwh)},
                   {"power_utilization", num(t.power_utilization)},
                   {"wall_clock_days_interval", range_json(time_range(iv.step, t.wall_s / 86400.0))},
                   {"gpu_hours_interval", range_json(time_range(iv.step, t.gpu_hours))},
                   {"cost_usd_interval", range_json(time_range(iv.step, t.cost_usd))},
                   {"energy_kwh_interval", range_json(time_range(iv.step, t.energy_kwh))}};
  json by_class = json::object(), by_phase = json::object();
  for (int i = 0; i < spec::kKernelClassCount; ++i)
    if (pred.time_by_class[i] > 0) by_class[std::string(spec::name(static_cast<spec::KernelClass>(i)))] = num(pred.time_by_class[i]);
  for (int i = 0; i < spec::kPhaseCount; ++i)
    if (pred.time_by_phase[i] > 0) by_phase[std::string(spec::name(static_cast<spec::Phase>(i)))] = num(pred.time_by_phase[i]);
  j["time_by_class_s"] = by_class;
  j["time_by_phase_s"] = by_phase;
  std::vector<const engine::KernelResult*> ks;
  for (const auto& k : pred.kernels) ks.push_back(&k);
  std::stable_sort(ks.begin(), ks.end(), [](auto* a, auto* b) { return a->time_s > b->time_s; });
  if (top_kernels >= 0 && static_cast<int>(ks.size()) > top_kernels) ks.resize(top_kernels);
  json karr = json::array();
  KernelIntervals kernel_iv(pred, in);
  for (const auto* k : ks) {
    json e = {{"name", std::string(k->name)},
              {"phase", std::string(spec::name(k->phase))},
              {"class", std::string(spec::name(k->cls))},
              {"dtype", std::string(spec::name(k->dtype))},
              {"count", num(k->count)},
              {"flops", num(k->flops)},
              {"hbm_bytes", num(k->hbm_bytes)},
              {"intensity", num(k->intensity)},
              {"bound", std::string(cost::name(k->bound))},
              {"time_s", num(k->time_s)},
              {"share", num(k->share)},
              {"time_s_interval", range_json(time_range(kernel_iv.of(*k), k->time_s))}};
    if (k->cls == spec::KernelClass::kGemm)
      e["gemm"] = {{"m", num(k->gemm.m)}, {"n", num(k->gemm.n)}, {"k", num(k->gemm.k)}, {"batch", num(k->gemm.batch)}};
    karr.push_back(std::move(e));
  }
  j["kernels"] = std::move(karr);
  return j;
}

std::string prediction_table(const engine::Prediction& pred, const Inputs& in, int top_kernels) {
  std::string o;
  if (in.gpu && in.model && in.plan) {
    o += fmt::format("{} on {} x {}{}\n", in.model->name, in.plan->parallel.gpus(), in.gpu->name,
                     pred.calibrated ? " (calibrated)" : "");
    o += fmt::format("plan: micro-batch {}, global batch {}, sequence {}; {}\n", in.plan->micro_batch,
                     in.plan->effective_global_batch(),
                     graph::seq_len(*in.model, *in.plan), spec::plan_summary(*in.plan));
  }
  if (pred.status == engine::Status::kInvalid) {
    o += fmt::format("invalid plan: {}: {}\n", pred.problem.field, pred.problem.message);
    return o;
  }
  const auto& s = pred.step;
  const auto& m = pred.memory;
  o += "\n";
  // One summary line: the label in a column wide enough for the longest
  // ("comm SM contention"), then the figure and its note.
  auto line = [&](std::string_view label, const std::string& text) {
    o += "  " + pad(std::string(label), 19) + text + "\n";
  };
  const PredictionIntervals iv = prediction_intervals(pred, in);
  // "   80% interval 690–910 ms" after a figure; nothing without an interval.
  const auto within = [&](const Range& r, std::string (*format)(double)) {
    const std::string t = text::interval(iv.step, r, format);
    return t.empty() ? t : "   " + t;
  };
  line("step time", fmt::format("{}{}   ({} micro-batches of {})", format_seconds(s.time_s),
                                within(time_range(iv.step, s.time_s), format_seconds), s.micro_batches,
                                format_seconds(s.microbatch_time_s)));
  line("throughput", fmt::format("{} tokens/s{}   ({} tokens/s per GPU)", format_count(s.tokens_per_s),
                                 within(rate_range(iv.step, s.tokens_per_s), text::tokens_per_s),
                                 format_count(s.tokens_per_s / std::max(1LL, s.gpus))));
  const bool other_dtype = in.plan && in.plan->precision != spec::Precision::kBf16;
  line("MFU", fmt::format("{}{}   (vs the dense bf16 peak{}; attention FLOPs {})", format_percent(s.mfu),
                          within(rate_range(iv.step, s.mfu), format_percent),
                          other_dtype ? fmt::format("; {} vs the {} peak", format_percent(s.mfu_dtype),
                                                    spec::to_string(in.plan->precision))
                                      : std::string(),
                          s.flops_convention));
  line("interval", text::interval_source(iv.step));
  if (iv.step.fallback) line("", iv.step.note);
  if (iv.step.calibrated) line("", iv.step.calibration_note);
  line("HFU", fmt::format("{}   (model + recompute FLOPs)", format_percent(s.hfu)));
  line("model FLOPs", fmt::format("{} per step", format_flops(s.model_flops)));
  if (s.exposed_comm_s > 0 || s.bubble_s > 0)
    line("exposed comm",
         format_seconds(s.exposed_comm_s) +
             (s.bubble_s > 0 ? fmt::format("   pipeline bubble {} ({})", format_seconds(s.bubble_s),
                                           format_percent(s.bubble_fraction))
                             : std::string()));
  if (s.comm_slowdown_s > 0)
    line("comm SM contention", fmt::format("{}   (overlapped NCCL kernels take SMs from the GEMMs they overlap)",
                                           format_seconds(s.comm_slowdown_s)));
  if (s.host_bound)
    line("host dispatch", fmt::format("{} per step   (host-bound: the GPU waits for the framework's Python dispatch)",
                                      format_seconds(s.host_s)));
  else if (s.host_s > 0)
    line("host dispatch", fmt::format("{} per step, behind the kernels", format_seconds(s.host_s)));
  line("peak memory",
       fmt::format("{} of {}   {}{}", format_bytes(m.total), format_bytes(m.capacity), m.fits ? "fits" : "DOES NOT FIT",
                   m.peak_stage == "only"
                       ? std::string()
                       : fmt::format("   (peak on the {} pipeline stage; first {}, last {})", m.peak_stage,
                                     format_bytes(m.first_stage.total), format_bytes(m.last_stage.total))));
  line("memory range", fmt::format("{}   fits at the upper bound: {}",
                                   text::range(iv.memory.lo, iv.memory.hi, format_bytes),
                                   text::fits_at_upper_bound(iv.memory)));
  line("allocated", fmt::format("{}, reserved {}   ({} allocator reserve {})", format_bytes(m.allocated),
                                format_bytes(m.reserved),
                                in.plan ? spec::framework(in.plan->framework).id : std::string("framework"),
                                format_percent(m.allocator_reserve)));

  o += "\ntop kernels by time (per step)\n";
  std::vector<const engine::KernelResult*> ks;
  for (const auto& k : pred.kernels) ks.push_back(&k);
  std::stable_sort(ks.begin(), ks.end(), [](auto* a, auto* b) { return a->time_s > b->time_s; });
  o += fmt::format("  {} {} {} {} {} {} {} {} {} {}\n", pad("kernel", 26), pad("phase", 13), pad("class", 11),
                   pad("count", 7, true), pad("FLOPs", 12, true), pad("bytes", 11, true), pad("FLOP/B", 8, true),
                   pad("bound", 8), pad("time", 10, true), pad("share", 6, true));
  int shown = 0;
  for (const auto* k : ks) {
    if (shown++ >= top_kernels) break;
    o += fmt::format("  {} {} {} {} {} {} {} {} {} {}\n", pad(std::string(k->name), 26),
                     pad(std::string(spec::name(k->phase)), 13), pad(std::string(spec::name(k->cls)), 11),
                     pad(fmt::format("{:.0f}", k->count), 7, true), pad(format_flops(k->flops), 12, true),
                     pad(format_bytes(k->hbm_bytes), 11, true), pad(fmt::format("{:.1f}", k->intensity), 8, true),
                     pad(std::string(cost::name(k->bound)), 8), pad(format_seconds(k->time_s), 10, true),
                     pad(format_percent(k->share), 6, true));
  }
  o += "\nmemory per GPU\n";
  auto row = [&](std::string_view label, double v) {
    o += fmt::format("  {} {}  {}\n", pad(std::string(label), 16), pad(format_bytes(v), 11, true),
                     pad(format_percent(m.capacity > 0 ? v / m.capacity : 0), 6, true));
  };
  for (const auto& c : memory::kMemoryCategories) row(c.label, m.*c.bytes);
  row("total", m.total);
  o += fmt::format("  {} {}\n", pad("capacity", 16), pad(format_bytes(m.capacity), 11, true));
  o += fmt::format("  range {}: {}\n", text::range(iv.memory.lo, iv.memory.hi, format_bytes), iv.memory.basis);
  const auto& t = pred.totals;
  o += fmt::format("\ntraining run: {} tokens{} -> {:.0f} steps, {:.1f} days, {} GPU-hours, ${}, {} kWh\n",
                   format_count(t.tokens), t.tokens_default ? " (20 per parameter)" : "", t.steps,
                   t.wall_s / 86400.0, format_count(t.gpu_hours), format_count(t.cost_usd),
                   format_count(t.energy_kwh));
  if (iv.step.valid()) {
    const auto days = [](double d) { return fmt::format("{:.1f} days", d); };
    const auto dollars = [](double c) { return fmt::format("${}", format_count(c)); };
    const auto kwh = [](double e) { return format_count(e) + " kWh"; };
    const auto r = [&](double x, std::string (*format)(double)) {
      const Range q = time_range(iv.step, x);
      return text::range(q.lo, q.hi, format);
    };
    o += fmt::format("  {} interval: {}, {} GPU-hours, {}, {}\n", text::level(iv.step.level),
                     r(t.wall_s / 86400.0, +days), r(t.gpu_hours, format_count), r(t.cost_usd, +dollars),
                     r(t.energy_kwh, +kwh));
  }
  return o;
}

std::string prediction_csv(const engine::Prediction& pred, const Inputs& in) {
  std::string o = "name,phase,class,dtype,count,flops,hbm_bytes,intensity,bound,time_s,share,time_lo_s,time_hi_s\n";
  KernelIntervals kernel_iv(pred, in);
  for (const auto& k : pred.kernels) {
    const Range r = time_range(kernel_iv.of(k), k.time_s);
    o += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{}\n", k.name, spec::name(k.phase), spec::name(k.cls),
                     spec::name(k.dtype), k.count, k.flops, k.hbm_bytes, k.intensity, cost::name(k.bound), k.time_s,
                     k.share, r.valid ? fmt::format("{}", r.lo) : "", r.valid ? fmt::format("{}", r.hi) : "");
  }
  return o;
}

}  // namespace ridgeline::report
