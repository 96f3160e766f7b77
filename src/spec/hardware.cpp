#include "ridgeline/spec/hardware.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>

#include "ridgeline/spec/yaml_reader.hpp"

namespace ridgeline::spec {

using units::Dimension;

namespace {

// One row per generation: the word the profile writes and what the part has
// (GenerationInfo's comment gives the source of each column).
//   word             generation                   vendor           fp8    fp4    wgmma  async  fa3    non-TN fp8
constexpr GenerationInfo kGenerations[] = {
    {"ampere", Generation::kAmpere, Vendor::kNvidia, false, false, false, false, false, false},
    {"ada", Generation::kAda, Vendor::kNvidia, true, false, false, false, false, false},
    {"hopper", Generation::kHopper, Vendor::kNvidia, true, false, true, true, true, false},
    {"blackwell", Generation::kBlackwell, Vendor::kNvidia, true, true, false, true, false, true},
    {"rtx_blackwell", Generation::kRtxBlackwell, Vendor::kNvidia, true, true, false, false, false, false},
    {"cdna2", Generation::kCdna2, Vendor::kAmd, false, false, false, false, false, false},
    {"cdna3", Generation::kCdna3, Vendor::kAmd, true, false, false, false, false, false},
    {"cdna4", Generation::kCdna4, Vendor::kAmd, true, true, false, false, false, false},
    {"host", Generation::kHost, Vendor::kHost, false, false, false, false, false, false},
};
static_assert(std::size(kGenerations) == kGenerationCount);

constexpr std::pair<std::string_view, Vendor> kVendors[] = {
    {"nvidia", Vendor::kNvidia}, {"amd", Vendor::kAmd}, {"host", Vendor::kHost}};

/// A per-event time (a kernel launch, a link or HBM latency): zero or more,
/// and at most a second. Beyond that the figure is not a GPU's (a launch costs
/// microseconds) and a step's sum of them leaves the range of a double.
std::optional<double> event_time(MapReader& r, const std::string& key) {
  auto v = r.quantity(key, Dimension::kTime, false, true);
  if (v && *v > 1.0) {
    r.error_at(key, fmt::format("expected a time of at most 1 s, got {:g} s", *v));
    return std::nullopt;
  }
  return v;
}

/// A CPU optimizer's rate: parameters updated per second, "1.1G params/s".
std::optional<double> cpu_adam_rate(MapReader& r, const std::string& key) {
  if (!r.has(key)) return std::nullopt;
  const auto text = r.string(key);
  if (!text) return std::nullopt;
  constexpr std::string_view kSuffix = "params/s";
  std::string_view t = *text;
  const bool suffixed = t.ends_with(kSuffix);
  if (suffixed) t.remove_suffix(kSuffix.size());
  while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
  const units::ParseResult n = units::parse(t, Dimension::kCount);
  if (!suffixed || t.empty() || !n.value || !(*n.value > 0)) {
    r.error_at(key, fmt::format("expected a parameter update rate such as \"1.1G params/s\", got \"{}\"", *text));
    return std::nullopt;
  }
  return *n.value;
}

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
  if (auto v = event_time(r, "hbm_latency")) e.hbm_latency_s = *v;
  if (auto c = r.map("class_efficiency")) {
    for (int i = 0; i < kKernelClassCount; ++i)
      if (auto v = c->number(std::string(kKernelClassNames[i]), false, 0.01, 2.0)) e.class_mem_frac[i] = *v;
    c->finish();
  }
  if (auto v = event_time(r, "launch_overhead")) e.launch_overhead_s = *v;
  if (auto v = r.number("comm_efficiency", false, 0.01, 1.0)) e.comm_frac = *v;
}

/// The fabric fields of `interconnect:` (InterconnectSpec says what each
/// means) and their agreement with each other and with inter_node_bandwidth.
void read_fabric(MapReader& r, InterconnectSpec& i) {
  i.nvswitch = r.boolean("nvswitch").value_or(false);
  i.nvls = r.boolean("nvls").value_or(false);
  i.nics_per_node = static_cast<int>(r.integer("nics_per_node", false, 1, 1024).value_or(0));
  i.nic_bytes_per_s = r.quantity("nic_bandwidth", Dimension::kByteRate).value_or(0);
  i.rail_optimized = r.boolean("rail_optimized").value_or(false);
  i.comm_channels = static_cast<int>(r.integer("comm_channels", false, 1, 1024).value_or(0));
  if (i.nvls && !i.nvswitch) r.error_at("nvls", "NVLink SHARP runs in NVSwitch; set nvswitch: true or remove nvls");
  if ((i.nics_per_node > 0) != (i.nic_bytes_per_s > 0)) {
    const bool count = i.nics_per_node > 0;
    r.error_at(count ? "nics_per_node" : "nic_bandwidth",
               count ? "needs interconnect.nic_bandwidth, one NIC's bandwidth" : "needs interconnect.nics_per_node");
  }
  if (i.rail_optimized && i.nics_per_node < i.gpus_per_node)
    r.error_at("rail_optimized", fmt::format("a rail-optimized node has a NIC per GPU; nics_per_node is {} for {} GPUs",
                                             i.nics_per_node, i.gpus_per_node));
  if (i.nics_per_node > 0 && i.nic_bytes_per_s > 0) {
    const double share = i.nic_bytes_per_s * std::min(i.nics_per_node, i.gpus_per_node) / i.gpus_per_node;
    if (!(i.inter_node_bytes_per_s > 0)) i.inter_node_bytes_per_s = share;  // left out: the NICs' share
    else if (std::fabs(share - i.inter_node_bytes_per_s) > 1e-6 * share)
      r.error_at("inter_node_bandwidth",
                 fmt::format("{:g} GB/s per GPU, but nic_bandwidth x min(nics_per_node, gpus_per_node) / "
                             "gpus_per_node is {:g} GB/s; make them agree",
                             i.inter_node_bytes_per_s / 1e9, share / 1e9));
  }
}

void read_calibration(MapReader& r, CalibrationSpec& c) {
  c.present = true;
  c.measurements = r.string("measurements").value_or("");
  c.device = r.string("device").value_or("");
  c.date = r.string("date").value_or("");
  read_efficiency(r, c.efficiency);
  YamlNode res = r.sequence("residuals");
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
  c.heldout_fraction = r.number("heldout_fraction", false, 0.0, 0.99).value_or(0.0);
  YamlNode held = r.sequence("heldout");
  if (held.IsDefined()) {
    for (size_t i = 0; i < held.size(); ++i) {
      MapReader e(held[i], r.file(), r.field(fmt::format("heldout[{}]", i)), r.diags());
      if (!e.valid()) continue;
      HeldoutResidual h;
      h.cls = e.string("class", true).value_or("");
      h.records = static_cast<int>(e.integer("records", true, 1).value_or(0));
      h.log_mean = e.number("log_mean", true, -10.0, 10.0).value_or(0.0);
      h.log_sd = e.number("log_sd", true, 0.0, 10.0).value_or(0.0);
      e.finish();
      c.heldout.push_back(h);
    }
  }
  r.finish();
}

/// The aliases sequence: each a non-empty name, no two the same once normalised.
void read_aliases(MapReader& top, HardwareSpec& hw) {
  const YamlNode seq = top.sequence("aliases");
  if (!seq.IsDefined()) return;
  std::vector<std::string> normalized;
  for (size_t i = 0; i < seq.size(); ++i) {
    const YamlNode a = seq[i];
    const std::string field = fmt::format("aliases[{}]", i);
    if (!a.IsScalar() || normalize_gpu_name(a.Scalar()).empty()) {
      top.diags().error(loc_of(top.file(), a), field,
                        "expected a GPU name as sources print it, such as \"H100-SXM5-80GB\"");
      continue;
    }
    const std::string n = normalize_gpu_name(a.Scalar());
    if (auto it = std::find(normalized.begin(), normalized.end(), n); it != normalized.end()) {
      top.diags().error(loc_of(top.file(), a), field,
                        fmt::format("'{}' is the same name as aliases[{}] ('{}') once normalised", a.Scalar(),
                                    it - normalized.begin(), hw.aliases[it - normalized.begin()]));
      continue;
    }
    normalized.push_back(n);
    hw.aliases.push_back(a.Scalar());
  }
}

}  // namespace

const GenerationInfo& generation_info(Generation g) {
  for (const auto& row : kGenerations)
    if (row.generation == g) return row;
  return kGenerations[std::size(kGenerations) - 1];
}

std::optional<Generation> parse_generation(std::string_view s) {
  for (const auto& row : kGenerations)
    if (row.word == s) return row.generation;
  return std::nullopt;
}

std::string_view name(Generation g) { return generation_info(g).word; }

std::string generation_choices() {
  std::string out;
  for (const auto& row : kGenerations) out += (out.empty() ? "" : ", ") + std::string(row.word);
  return out;
}

std::optional<Vendor> parse_vendor(std::string_view s) {
  for (const auto& [w, v] : kVendors)
    if (w == s) return v;
  return std::nullopt;
}

std::string_view name(Vendor v) {
  for (const auto& [w, x] : kVendors)
    if (x == v) return w;
  return "nvidia";
}

std::string vendor_choices() {
  std::string out;
  for (const auto& [w, v] : kVendors) out += (out.empty() ? "" : ", ") + std::string(w);
  return out;
}

std::string normalize_gpu_name(std::string_view s) {
  const size_t cut = s.find_first_of("(,");
  if (cut != std::string_view::npos) s = s.substr(0, cut);
  std::string out;
  for (char c : s) {
    const char u = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    out += (u == ' ' || u == '_') ? '-' : u;
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  while (!out.empty() && out.front() == '-') out.erase(out.begin());
  for (std::string_view prefix : {"NVIDIA-", "AMD-", "INSTINCT-", "GEFORCE-"})
    if (out.rfind(prefix, 0) == 0) out.erase(0, prefix.size());
  return out;
}

double clock_at_power(const HardwareSpec& hw, double power_w) {
  const double sustained_hz = hw.sustained_clock_hz > 0 ? hw.sustained_clock_hz : hw.clock_hz;
  if (!(power_w > 0) || !(hw.tdp_w > 0)) return sustained_hz;
  const double f_hz = sustained_hz * std::cbrt(power_w / hw.tdp_w);
  return hw.clock_hz > 0 ? std::min(hw.clock_hz, f_hz) : f_hz;
}

HardwareSpec load_hardware(const std::string& path) { return load_hardware_with_overrides(path, {}); }

HardwareSpec load_hardware_with_overrides(const std::string& path, std::span<const FieldOverride> overrides) {
  YamlNode root = load_yaml_file(path);
  support::DiagnosticList diags;
  apply_overrides(root, overrides, diags);
  HardwareSpec hw;
  hw.source_file = path;
  hw.id = std::filesystem::path(path).stem().string();
  MapReader top(root, path, "", diags);
  hw.name = top.string("name", true).value_or("");
  const auto vendor = top.word("vendor", parse_vendor, vendor_choices());
  hw.architecture = top.string("architecture").value_or("");
  const auto generation = top.word("generation", parse_generation, generation_choices(), true);
  if (generation) hw.generation = *generation;
  const Vendor maker = generation ? generation_info(*generation).vendor : vendor.value_or(Vendor::kNvidia);
  hw.vendor = std::string(name(maker));
  if (generation && vendor && *vendor != maker)
    top.error_at("generation", fmt::format("{} is a generation of {} GPUs, but vendor is {}", name(*generation),
                                           name(maker), name(*vendor)));
  read_aliases(top, hw);

  if (auto mem = top.map("memory", true)) {
    hw.memory_bytes = mem->quantity("capacity", Dimension::kBytes, true).value_or(0);
    hw.hbm_bytes_per_s = mem->quantity("hbm_bandwidth", Dimension::kByteRate, true).value_or(0);
    hw.l2_bytes = mem->quantity("l2_cache", Dimension::kBytes).value_or(0);
    mem->finish();
  }
  if (auto comp = top.map("compute", true)) {
    hw.sm_count = static_cast<int>(comp->integer("sm_count", true, 1, 100000).value_or(0));
    hw.clock_hz = comp->quantity("boost_clock", Dimension::kFrequency).value_or(0);
    const auto sustained = comp->quantity("sustained_clock", Dimension::kFrequency);
    if (sustained && !(hw.clock_hz > 0))
      comp->error_at("sustained_clock", "needs compute.boost_clock, the clock it may not exceed");
    else if (sustained && *sustained > hw.clock_hz)
      comp->error_at("sustained_clock", fmt::format("expected at most the boost clock ({:g} MHz), got {:g} MHz",
                                                    hw.clock_hz / 1e6, *sustained / 1e6));
    hw.sustained_clock_hz = sustained.value_or(hw.clock_hz);
    hw.exp_per_sm_clock = comp->number("exp_per_sm_clock", false, 1.0, 1024.0).value_or(16.0);
    hw.smem_per_sm_bytes = comp->quantity("smem_per_sm", Dimension::kBytes).value_or(0);
    hw.sram_bytes_per_s = comp->quantity("sram_bandwidth", Dimension::kByteRate).value_or(0);
    hw.launch_overhead_s = event_time(*comp, "launch_overhead").value_or(0);
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
    i.intra_node_latency_s = event_time(*ic, "intra_node_latency").value_or(0);
    i.inter_node_bytes_per_s = ic->quantity("inter_node_bandwidth", Dimension::kByteRate).value_or(0);
    i.inter_node_latency_s = event_time(*ic, "inter_node_latency").value_or(0);
    read_fabric(*ic, i);
    ic->finish();
  }
  if (auto h = top.map("host")) {
    HostSpec& host = hw.host;
    if (auto v = h->quantity("memory_per_gpu", Dimension::kBytes)) host.memory_bytes = *v, host.memory_stated = true;
    if (auto v = h->quantity("link_bandwidth", Dimension::kByteRate))
      host.link_bytes_per_s = *v, host.link_stated = true;
    if (auto v = cpu_adam_rate(*h, "cpu_adam_rate")) host.cpu_adam_params_per_s = *v, host.cpu_adam_stated = true;
    h->finish();
  }
  if (auto pw = top.map("power")) {
    hw.tdp_w = pw->quantity("tdp", Dimension::kPower).value_or(0);
    hw.idle_w = pw->quantity("idle", Dimension::kPower).value_or(0);
    if (hw.idle_w > 0 && hw.tdp_w > 0 && hw.idle_w >= hw.tdp_w)
      pw->error_at("idle", fmt::format("expected an idle power below the TDP ({:g} W), got {:g} W", hw.tdp_w,
                                       hw.idle_w));
    pw->finish();
  }
  if (auto rel = top.map("reliability")) {
    // Failures per GPU-hour: a plain number, as Llama 3's 1.97e-5.
    hw.failure_rate_per_gpu_hour = rel->number("failure_rate_per_gpu_hour", false, 0.0, 1.0).value_or(0);
    rel->finish();
  }
  hw.price_per_gpu_hour_usd = top.quantity("price_per_gpu_hour", Dimension::kPricePerHour).value_or(0);
  if (auto src = top.map("sources")) {
    for (const YamlPair& p : src->self().pairs()) {
      if (!p.first.IsScalar()) continue;  // finish() reports a key that is not a name
      const std::string& key = p.first.Scalar();
      src->allow(key);
      if (p.second.IsScalar()) hw.sources[key] = p.second.Scalar();
      else src->error_at(key, "expected a text saying where the figure comes from");
    }
    src->finish();
  }
  if (auto cal = top.map("calibration")) read_calibration(*cal, hw.calibration);
  top.finish();

  // Cross-field checks.
  // fp8 (fp4) peak exactly when the generation has fp8 (fp4) tensor cores.
  if (generation && hw.peak(Peak::kBf16) > 0) {
    const YamlNode peak = root["compute"]["peak"];
    struct Rule {
      Peak p;
      bool has;
      std::string_view since;  // the generations that brought the format
    };
    const Rule rules[] = {{Peak::kFp8, hw.has_fp8(), "ada and hopper"},
                          {Peak::kFp4, hw.has_fp4(), "blackwell and cdna4"}};
    for (const Rule& r : rules) {
      const std::string key(name(r.p));
      if (r.has && !hw.supports(r.p))
        diags.error(loc_of(path, peak), "compute.peak." + key,
                    fmt::format("missing: {} GPUs have {} tensor cores; give the dense {} peak",
                                name(hw.generation), key, key));
      else if (!r.has && hw.supports(r.p))
        diags.error(loc_of(path, peak[key]), "compute.peak." + key,
                    fmt::format("{} GPUs have no {} tensor cores ({} arrived with {}); remove it or correct generation",
                                name(hw.generation), key, key, r.since));
    }
  }
  // An fp8 peak above twice bf16's is a sparsity figure copied by mistake.
  if (hw.peak(Peak::kFp8) > 0 && hw.peak(Peak::kBf16) > 0 && hw.peak(Peak::kFp8) > 2.5 * hw.peak(Peak::kBf16))
    diags.error(loc_of(path, root["compute"]["peak"]["fp8"]), "compute.peak.fp8",
                "more than 2x the bf16 peak; give the dense figure, not the sparsity one");
  relabel_overrides(diags, overrides).throw_if_errors();
  for (const FieldOverride& o : overrides) hw.sources[o.field] = o.label + " on the command line";
  return hw;
}

}  // namespace ridgeline::spec
