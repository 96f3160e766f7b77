#include "ridgeline/spec/hardware.hpp"

#include <filesystem>
#include <fmt/format.h>

#include "ridgeline/spec/yaml_reader.hpp"

namespace ridgeline::spec {

using units::Dimension;

namespace {

void read_efficiency(MapReader& r, EfficiencySpec& e) {
  if (auto g = r.map("gemm_efficiency")) {
    for (int i = 0; i < kPeakCount; ++i)
      if (auto v = g->number(std::string(kPeakNames[i]), false, 0.01, 1.0)) e.gemm_frac[i] = *v;
    g->finish();
  }
  if (auto t = r.map("gemm_tile")) {
    if (auto v = t->integer("m", true, 1, 4096)) e.gemm_tile_m = static_cast<double>(*v);
    if (auto v = t->integer("n", true, 1, 4096)) e.gemm_tile_n = static_cast<double>(*v);
    if (auto v = t->number("k0", false, 0.0, 65536.0)) e.gemm_k0 = *v;
    t->finish();
  }
  if (auto v = r.number("attention_efficiency", false, 0.01, 1.0)) e.attention_frac = *v;
  if (auto v = r.number("hbm_efficiency", false, 0.01, 1.0)) e.hbm_frac = *v;
  if (auto v = r.quantity("hbm_latency", Dimension::kTime, false, true)) e.hbm_latency_s = *v;
  if (auto c = r.map("class_efficiency")) {
    for (int i = 0; i < kKernelClassCount; ++i)
      if (auto v = c->number(std::string(kKernelClassNames[i]), false, 0.01, 2.0)) e.class_mem_frac[i] = *v;
    c->finish();
  }
  if (auto v = r.quantity("launch_overhead", Dimension::kTime, false, true)) e.launch_overhead_s = *v;
  if (auto v = r.number("comm_efficiency", false, 0.01, 1.0)) e.comm_frac = *v;
}

void read_calibration(MapReader& r, CalibrationSpec& c) {
  c.present = true;
  c.measurements = r.string("measurements").value_or("");
  c.device = r.string("device").value_or("");
  c.date = r.string("date").value_or("");
  read_efficiency(r, c.efficiency);
  YAML::Node res = r.sequence("residuals");
  if (res.IsDefined()) {
    for (size_t i = 0; i < res.size(); ++i) {
      MapReader e(res[i], r.file(), r.field(fmt::format("residuals[{}]", i)), r.diags());
      if (!e.valid()) continue;
      CalibrationResidual cr;
      cr.cls = e.string("class", true).value_or("");
      cr.records = static_cast<int>(e.integer("records", false).value_or(0));
      cr.median_abs_pct = e.number("median_abs_pct", false, 0.0, 1e9).value_or(0.0);
      cr.p90_abs_pct = e.number("p90_abs_pct", false, 0.0, 1e9).value_or(0.0);
      e.finish();
      c.residuals.push_back(cr);
    }
  }
  r.finish();
}

}  // namespace

HardwareSpec load_hardware(const std::string& path) {
  YAML::Node root = load_yaml_file(path);
  support::DiagnosticList diags;
  HardwareSpec hw;
  hw.source_file = path;
  hw.id = std::filesystem::path(path).stem().string();
  MapReader top(root, path, "", diags);
  hw.name = top.string("name", true).value_or("");
  hw.vendor = top.string("vendor").value_or("nvidia");
  hw.architecture = top.string("architecture").value_or("");

  if (auto mem = top.map("memory", true)) {
    hw.memory_bytes = mem->quantity("capacity", Dimension::kBytes, true).value_or(0);
    hw.hbm_bytes_per_s = mem->quantity("hbm_bandwidth", Dimension::kByteRate, true).value_or(0);
    hw.l2_bytes = mem->quantity("l2_cache", Dimension::kBytes).value_or(0);
    mem->finish();
  }
  if (auto comp = top.map("compute", true)) {
    hw.sm_count = static_cast<int>(comp->integer("sm_count", true, 1, 100000).value_or(0));
    hw.clock_hz = comp->quantity("boost_clock", Dimension::kFrequency).value_or(0);
    hw.smem_per_sm_bytes = comp->quantity("smem_per_sm", Dimension::kBytes).value_or(0);
    hw.sram_bytes_per_s = comp->quantity("sram_bandwidth", Dimension::kByteRate).value_or(0);
    hw.launch_overhead_s = comp->quantity("launch_overhead", Dimension::kTime, false, true).value_or(0);
    if (auto peak = comp->map("peak", true)) {
      for (int i = 0; i < kPeakCount; ++i) {
        const std::string key(kPeakNames[i]);
        const bool required = (i == static_cast<int>(Peak::kBf16) || i == static_cast<int>(Peak::kFp32));
        hw.peak_flop_per_s[i] = peak->quantity(key, Dimension::kFlopRate, required).value_or(0);
      }
      peak->finish();
    }
    comp->finish();
  }
  if (auto ic = top.map("interconnect")) {
    auto& i = hw.interconnect;
    i.gpus_per_node = static_cast<int>(ic->integer("gpus_per_node", false, 1, 1024).value_or(8));
    i.intra_node_bytes_per_s = ic->quantity("intra_node_bandwidth", Dimension::kByteRate).value_or(0);
    i.intra_node_latency_s = ic->quantity("intra_node_latency", Dimension::kTime, false, true).value_or(0);
    i.inter_node_bytes_per_s = ic->quantity("inter_node_bandwidth", Dimension::kByteRate).value_or(0);
    i.inter_node_latency_s = ic->quantity("inter_node_latency", Dimension::kTime, false, true).value_or(0);
    ic->finish();
  }
  if (auto pw = top.map("power")) {
    hw.tdp_w = pw->quantity("tdp", Dimension::kPower).value_or(0);
    pw->finish();
  }
  hw.price_per_gpu_hour_usd = top.quantity("price_per_gpu_hour", Dimension::kPricePerHour).value_or(0);
  if (auto src = top.map("sources")) {
    for (auto it = src->self().begin(); it != src->self().end(); ++it) {
      if (!it->first.IsScalar()) continue;  // finish() reports a key that is not a name
      std::string key = it->first.Scalar();
      src->allow(key);
      if (it->second.IsScalar()) hw.sources[key] = it->second.Scalar();
      else src->error_at(key, "expected a text saying where the figure comes from");
    }
    src->finish();
  }
  if (auto cal = top.map("calibration")) read_calibration(*cal, hw.calibration);
  top.finish();

  // Cross-field checks.
  // An fp8 peak above twice bf16's is a sparsity figure copied by mistake.
  if (hw.peak(Peak::kFp8) > 0 && hw.peak(Peak::kBf16) > 0 && hw.peak(Peak::kFp8) > 2.5 * hw.peak(Peak::kBf16))
    diags.error(loc_of(path, root["compute"]["peak"]["fp8"]), "compute.peak.fp8",
                "more than 2x the bf16 peak; give the dense figure, not the sparsity one");
  diags.throw_if_errors();
  return hw;
}

}  // namespace ridgeline::spec
