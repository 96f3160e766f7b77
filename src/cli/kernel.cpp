// `ridgeline kernel`: the cost of one kernel on one GPU. The kernel comes from
// the graph's own builders (graph/kernels.hpp, graph/memory_kernels.hpp) and
// its cost from engine::evaluate_kernel, the roofline every kernel of a step
// is costed with; this file only parses the shape, sums a kernel sequence
// (naive attention, forward + backward) and prints one flat record.
#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <memory>
#include <nlohmann/json.hpp>
#include <span>
#include <variant>

#include "commands.hpp"
#include "common.hpp"
#include "ridgeline/cost/cost.hpp"
#include "ridgeline/engine/kernel_eval.hpp"
#include "ridgeline/graph/kernels.hpp"
#include "ridgeline/graph/memory_kernels.hpp"
#include "ridgeline/spec/yaml_reader.hpp"
#include "ridgeline/uncertainty/interval.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::cli {

namespace {

/// What one run reports: one flat record, printed as a table and as JSON
/// from the field table below (README, "Cost one kernel").
struct KernelRecord {
  std::string schema = "ridgeline.kernel/1";
  std::string kernel;  // the subcommand: gemm, attention, elementwise, norm, softmax, cast
  std::string cls;     // spec::KernelClass of the kernel ("attention" for either implementation)
  std::string gpu;
  std::string shape;
  std::string dtype;
  std::string impl, pass;  // attention only
  double kernels = 0, launches = 0;
  double flops = 0, model_flops = 0;
  double read_bytes = 0, write_bytes = 0, hbm_bytes = 0, sram_bytes = 0;
  double time_s = 0, compute_s = 0, memory_s = 0, sram_s = 0, launch_s = 0;
  double flop_per_s = 0, model_flop_per_s = 0, bytes_per_s = 0;
  double intensity = 0;
  std::string peak;
  double peak_flop_per_s = 0, hbm_bytes_per_s = 0, ridge_point = 0;
  std::string bound;
  std::string detail_kernel;
  double tile_m = 0, tile_n = 0, split_k = 0, blocks = 0, waves = 0, efficiency = 0;
  std::string schedule;  // GEMMs: data-parallel, split-K or stream-K
  std::string basis;
  bool calibrated = false, cuda_graphs = false;
  double power_limit_w = 0;
  // GEMM and attention: the prediction interval of the time (uncertainty/interval.hpp).
  double interval_level = 0, time_lo_s = 0, time_hi_s = 0, interval_rows = 0;
  std::string interval_pool, interval_note;
};

enum class Unit : std::uint8_t {
  kText, kFlag, kCount, kFlop, kBytes, kSeconds, kFlopRate, kByteRate, kIntensity, kFraction, kWatts
};

/// One field of the record: its JSON key, its table label (empty: JSON only)
/// and how it prints. An `optional` field is "not set" at 0 or "": JSON null;
/// in the table a number prints "-" and a text row is left out.
struct Field {
  std::string_view key;
  std::string_view label;
  Unit unit;
  bool optional;
  std::variant<std::string KernelRecord::*, double KernelRecord::*, bool KernelRecord::*> member;
};

using R = KernelRecord;
constinit const Field kFields[] = {
    {"schema", "", Unit::kText, false, &R::schema},
    {"kernel", "", Unit::kText, false, &R::kernel},
    {"class", "class", Unit::kText, false, &R::cls},
    {"gpu", "", Unit::kText, false, &R::gpu},
    {"shape", "", Unit::kText, false, &R::shape},
    {"dtype", "", Unit::kText, false, &R::dtype},
    {"impl", "implementation", Unit::kText, true, &R::impl},
    {"pass", "pass", Unit::kText, true, &R::pass},
    {"kernels", "kernels summed", Unit::kCount, false, &R::kernels},
    {"launches", "launches", Unit::kCount, false, &R::launches},
    {"time_s", "time", Unit::kSeconds, false, &R::time_s},
    {"interval_level", "  interval level", Unit::kFraction, true, &R::interval_level},
    {"time_lo_s", "  interval low", Unit::kSeconds, true, &R::time_lo_s},
    {"time_hi_s", "  interval high", Unit::kSeconds, true, &R::time_hi_s},
    {"interval_pool", "  interval from", Unit::kText, true, &R::interval_pool},
    {"interval_rows", "  interval rows", Unit::kCount, true, &R::interval_rows},
    {"interval_note", "  interval note", Unit::kText, true, &R::interval_note},
    {"bound", "bound", Unit::kText, false, &R::bound},
    {"compute_s", "  compute term", Unit::kSeconds, true, &R::compute_s},
    {"memory_s", "  memory term", Unit::kSeconds, true, &R::memory_s},
    {"sram_s", "  sram term", Unit::kSeconds, true, &R::sram_s},
    {"launch_s", "  launch term", Unit::kSeconds, true, &R::launch_s},
    {"flops", "FLOPs (hardware)", Unit::kFlop, false, &R::flops},
    {"model_flops", "FLOPs (model)", Unit::kFlop, false, &R::model_flops},
    {"flop_per_s", "FLOP/s (hardware FLOPs)", Unit::kFlopRate, false, &R::flop_per_s},
    {"model_flop_per_s", "FLOP/s (model FLOPs)", Unit::kFlopRate, false, &R::model_flop_per_s},
    {"read_bytes", "HBM read", Unit::kBytes, false, &R::read_bytes},
    {"write_bytes", "HBM written", Unit::kBytes, false, &R::write_bytes},
    {"hbm_bytes", "HBM traffic", Unit::kBytes, false, &R::hbm_bytes},
    {"sram_bytes", "shared memory traffic", Unit::kBytes, true, &R::sram_bytes},
    {"bytes_per_s", "HBM bytes/s", Unit::kByteRate, false, &R::bytes_per_s},
    {"intensity", "intensity", Unit::kIntensity, false, &R::intensity},
    {"peak", "peak used", Unit::kText, false, &R::peak},
    {"peak_flop_per_s", "  peak FLOP/s", Unit::kFlopRate, false, &R::peak_flop_per_s},
    {"hbm_bytes_per_s", "  HBM bandwidth", Unit::kByteRate, false, &R::hbm_bytes_per_s},
    {"ridge_point", "  ridge point", Unit::kIntensity, false, &R::ridge_point},
    {"detail_kernel", "detail of", Unit::kText, true, &R::detail_kernel},
    {"tile_m", "  tile M (Br)", Unit::kCount, true, &R::tile_m},
    {"tile_n", "  tile N (Bc)", Unit::kCount, true, &R::tile_n},
    {"schedule", "  schedule", Unit::kText, true, &R::schedule},
    {"split_k", "  split-K", Unit::kCount, true, &R::split_k},
    {"blocks", "  blocks", Unit::kCount, true, &R::blocks},
    {"waves", "  waves", Unit::kCount, true, &R::waves},
    {"efficiency", "  efficiency", Unit::kFraction, true, &R::efficiency},
    {"basis", "  basis", Unit::kText, true, &R::basis},
    {"calibrated", "calibrated", Unit::kFlag, false, &R::calibrated},
    {"cuda_graphs", "CUDA graphs", Unit::kFlag, false, &R::cuda_graphs},
    {"power_limit_w", "power limit", Unit::kWatts, true, &R::power_limit_w},
};

std::string format_value(Unit u, double v) {
  switch (u) {
    case Unit::kSeconds: return units::format_seconds(v);
    case Unit::kFlop: return units::format_flops(v);
    case Unit::kBytes: return units::format_bytes(v);
    case Unit::kFlopRate: return units::format_flop_rate(v);
    case Unit::kByteRate: return units::format_byte_rate(v);
    case Unit::kIntensity: return fmt::format("{:.4g} FLOP/B", v);
    case Unit::kFraction: return units::format_percent(v);
    case Unit::kWatts: return fmt::format("{:g} W", v);
    case Unit::kCount: return fmt::format("{:g}", v);
    case Unit::kText:
    case Unit::kFlag: break;
  }
  return fmt::format("{:g}", v);
}

std::string record_table(const KernelRecord& r) {
  std::string out = fmt::format("{} on {}: {}, {}\n", r.kernel, r.gpu, r.shape, r.dtype);
  for (const Field& f : kFields) {
    if (f.label.empty()) continue;
    std::string value;
    if (auto s = std::get_if<std::string R::*>(&f.member)) {
      value = r.*(*s);
      if (value.empty()) continue;  // does not apply (impl of a GEMM) or not set
    } else if (auto b = std::get_if<bool R::*>(&f.member)) {
      value = r.*(*b) ? "yes" : "no";
    } else {
      const double v = r.*std::get<double R::*>(f.member);
      value = f.optional && v == 0 ? std::string("-") : format_value(f.unit, v);
    }
    out += fmt::format("  {:<26} {}\n", f.label, value);
  }
  return out;
}

std::string record_json(const KernelRecord& r) {
  nlohmann::ordered_json j;
  for (const Field& f : kFields) {
    const std::string key(f.key);
    if (auto s = std::get_if<std::string R::*>(&f.member)) {
      const std::string& v = r.*(*s);
      if (f.optional && v.empty()) j[key] = nullptr;
      else j[key] = v;
    } else if (auto b = std::get_if<bool R::*>(&f.member)) {
      j[key] = r.*(*b);
    } else {
      const double v = r.*std::get<double R::*>(f.member);
      if (f.optional && v == 0) j[key] = nullptr;
      else if (f.unit == Unit::kCount && v == std::floor(v) && v < 0x1p53) j[key] = static_cast<std::int64_t>(v);
      else j[key] = v;
    }
  }
  return j.dump(2) + "\n";
}

/// A non-finite quantity is never printed.
void require_finite(const KernelRecord& r) {
  for (const Field& f : kFields)
    if (auto d = std::get_if<double R::*>(&f.member); d && !std::isfinite(r.*(*d)))
      throw UsageError{"kernel " + r.kernel, fmt::format("{} is not finite for {}", f.key, r.shape)};
}

// ---- flags ----

/// The accepted --dtype words of each kernel family; the first is the default.
constexpr std::string_view kGemmDtypes[] = {"bf16", "fp16", "fp32", "tf32", "fp8", "fp8_e4m3", "fp8_e5m2", "int8",
                                            "nvfp4"};
constexpr std::string_view kAttentionDtypes[] = {"bf16", "fp16", "fp8"};
constexpr std::string_view kStreamDtypes[] = {"bf16", "fp16", "fp32"};
constexpr std::string_view kCastDtypes[] = {"bf16", "fp16", "fp32", "fp8", "fp8_e4m3", "fp8_e5m2", "int8"};

std::string join_words(std::span<const std::string_view> words) {
  std::string s;
  for (size_t i = 0; i < words.size(); ++i) s += (i ? ", " : "") + std::string(words[i]);
  return s;
}

spec::Dtype parse_dtype_flag(const std::string& flag, const std::string& word, std::span<const std::string_view> ok) {
  if (std::find(ok.begin(), ok.end(), word) == ok.end())
    throw UsageError{flag, fmt::format("expected one of {}, got \"{}\"", join_words(ok), word)};
  return *spec::parse_dtype(word);
}

/// A shape dimension: a whole number >= 1 (the plan fields' wording).
double dimension(const std::string& flag, const std::string& text) {
  std::string error;
  const auto v = spec::parse_whole_number(text, 1, 1LL << 53, error);
  if (!v) throw UsageError{flag, error};
  return static_cast<double>(*v);
}

/// The tensor-core peak a GEMM or attention kernel of `dtype` runs at must
/// exist on the GPU (fp32 runs on the vector units and always does).
void require_tensor_cores(const spec::HardwareSpec& hw, const std::string& word, spec::Dtype dtype) {
  const spec::Peak p = spec::peak_of(dtype);
  if (p != spec::Peak::kFp32 && !hw.supports(p))
    throw UsageError{"--dtype", fmt::format("{} needs {} tensor cores; {} has none", word, spec::name(p), hw.name)};
}

struct CommonArgs {
  std::string gpu = "h100_sxm";
  std::string power_limit;
  bool no_calibration = false;
  bool cuda_graphs = false;
  std::string format = "table";
  std::string output;
  double interval_level = uncertainty::kDefaultLevel;
};

void add_common(CLI::App* cmd, CommonArgs& a) {
  cmd->add_option("--gpu", a.gpu, "GPU profile name (see 'ridgeline list gpus') or YAML file")->capture_default_str();
  cmd->add_option("--power-limit", a.power_limit,
                  "Board power limit in watts (> 0; the sustained clock follows it); default: the profile's TDP")
      ->type_name("W");
  cmd->add_flag("--no-calibration", a.no_calibration, "Ignore the profile's calibration block");
  cmd->add_flag("--cuda-graphs", a.cuda_graphs, "Launch at the CUDA-graph replay cost");
  add_format_and_output(*cmd, a.format, a.output, {Format::kTable, Format::kJson});
  add_interval_level(*cmd, a.interval_level);
}

struct Options {
  bool json = false;
  engine::KernelEvalOptions eval;
  double interval_level = uncertainty::kDefaultLevel;
};

Options parse_common(const CommonArgs& a) {
  Options o;
  o.json = parse_format(a.format, {Format::kTable, Format::kJson}) == Format::kJson;
  o.eval.use_calibration = !a.no_calibration;
  o.eval.cuda_graphs = a.cuda_graphs;
  check_interval_level(a.interval_level);
  o.interval_level = a.interval_level;
  if (!a.power_limit.empty()) {
    std::string error;
    const auto w = spec::parse_real_number(a.power_limit, 0, 1e300, error);
    if (!w) throw UsageError{"--power-limit", error};
    if (!(*w > 0))
      throw UsageError{"--power-limit", fmt::format("expected watts greater than zero, got {}", a.power_limit)};
    o.eval.power_limit_w = *w;
  }
  return o;
}

/// Costs `kernels` in sequence and fills the record: FLOPs, bytes and
/// times summed; the bound and the detail (tile, blocks, efficiency) are
/// those of the kernel that takes longest. The peak is the one the cost
/// model charges the kernel's FLOPs to: the tensor peak of its dtype for
/// GEMMs and attention, the vector rate for the memory-bound classes.
KernelRecord cost_sequence(const std::vector<graph::Kernel>& kernels, const spec::HardwareSpec& hw,
                           const Options& o, KernelRecord r) {
  cost::KernelCost longest;
  std::string_view longest_name;
  spec::KernelClass longest_cls = spec::KernelClass::kElementwise;
  for (const graph::Kernel& k : kernels) {
    const cost::KernelCost c = engine::evaluate_kernel(k, hw, o.eval);
    r.kernels += 1;
    r.launches += k.launches;
    r.flops += k.flops;
    r.model_flops += k.model_flops;
    r.read_bytes += k.read_bytes;
    r.write_bytes += k.write_bytes;
    r.sram_bytes += k.sram_bytes;
    r.time_s += c.time_s;
    r.compute_s += c.compute_s;
    r.memory_s += c.memory_s;
    r.sram_s += c.sram_s;
    r.launch_s += c.launch_s;
    if (longest_name.empty() || c.time_s > longest.time_s) longest = c, longest_name = k.name, longest_cls = k.cls;
  }
  r.hbm_bytes = r.read_bytes + r.write_bytes;
  r.intensity = r.hbm_bytes > 0 ? r.flops / r.hbm_bytes : 0;
  if (r.time_s > 0) {
    r.flop_per_s = r.flops / r.time_s;
    r.model_flop_per_s = r.model_flops / r.time_s;
    r.bytes_per_s = r.hbm_bytes / r.time_s;
  }
  r.bound = std::string(cost::name(longest.bound));
  if (kernels.size() > 1) r.detail_kernel = std::string(longest_name);
  r.tile_m = longest.tile_m;
  r.tile_n = longest.tile_n;
  r.split_k = longest.split_k;
  // cost::KernelCost marks stream-K with split_k 0 on a GEMM that has waves.
  if (longest_cls == spec::KernelClass::kGemm && longest.waves > 0)
    r.schedule = longest.split_k == 0 ? "stream-K" : longest.split_k > 1 ? "split-K" : "data-parallel";
  r.blocks = longest.blocks;
  r.waves = longest.waves;
  r.efficiency = longest.efficiency;
  r.basis = std::string(longest.basis);

  cost::ResolveOptions ro;
  ro.use_calibration = o.eval.use_calibration;
  ro.power_limit_w = o.eval.power_limit_w;
  const cost::CostParams params = cost::resolve(hw, ro);
  const spec::KernelClass cls = kernels.front().cls;
  const spec::Peak pk = spec::peak_of(kernels.front().dtype);
  r.hbm_bytes_per_s = params.hbm_bytes_per_s;
  if (cls == spec::KernelClass::kGemm || cls == spec::KernelClass::kAttention) {
    r.peak = std::string(spec::name(pk));
    r.peak_flop_per_s = params.peak_flop_per_s[static_cast<int>(pk)];
    r.ridge_point = cost::ridge_point(params, pk);
  } else {
    r.peak = "vector";
    r.peak_flop_per_s = params.vector_flop_per_s;
    r.ridge_point = params.vector_flop_per_s / params.hbm_bytes_per_s;
  }
  if (cls == spec::KernelClass::kGemm || cls == spec::KernelClass::kAttention) {
    uncertainty::KernelTraits t;
    t.kind = cls == spec::KernelClass::kGemm ? uncertainty::KernelKind::kGemm : uncertainty::KernelKind::kAttention;
    t.generation = hw.generation;
    t.dtype = kernels.front().dtype;
    if (params.calibrated && hw.calibration.present) t.calibration = &hw.calibration;
    const uncertainty::Interval iv = uncertainty::shipped().kernel_interval(t, o.interval_level);
    r.interval_level = o.interval_level;
    if (iv.valid()) {
      r.time_lo_s = iv.time_lo(r.time_s);
      r.time_hi_s = iv.time_hi(r.time_s);
      r.interval_pool = iv.pool;
      r.interval_rows = iv.rows;
    }
    r.interval_note = iv.calibrated ? iv.calibration_note : iv.note;
  }
  r.gpu = hw.name;
  r.calibrated = params.calibrated;
  r.cuda_graphs = o.eval.cuda_graphs;
  r.power_limit_w = o.eval.power_limit_w;
  require_finite(r);
  return r;
}

void emit(const KernelRecord& r, const Options& o, const std::string& output) {
  write_output(output, o.json ? record_json(r) : record_table(r));
}

std::string dtype_help(std::span<const std::string_view> words) {
  return fmt::format("Element type: {} (default {})", join_words(words), words.front());
}

constexpr const char* kFlopsNote =
    "FLOP/s is reported twice: on the kernel's hardware FLOPs (what it executes: causal attention's diagonal\n"
    "tiles in full, the backward's recomputation of the scores) and on its model FLOPs (what MFU credits:\n"
    "causal attention half the full product, the backward 2x the forward).\n";

// ---- subcommands ----

struct GemmArgs {
  CommonArgs common;
  std::string m, n, k, batch = "1", dtype = "bf16";
};

void register_gemm(CLI::App* parent, int& rc) {
  auto a = std::make_shared<GemmArgs>();
  auto* cmd = parent->add_subcommand("gemm", "C (m x n) = A (m x k) B (k x n), batch independent products");
  cmd->add_option("--m", a->m, "Rows of A and C")->required()->type_name("N");
  cmd->add_option("--n", a->n, "Columns of B and C")->required()->type_name("N");
  cmd->add_option("--k", a->k, "The reduction dimension")->required()->type_name("N");
  cmd->add_option("--batch", a->batch, "Independent products (default 1)")->type_name("N");
  cmd->add_option("--dtype", a->dtype, dtype_help(kGemmDtypes))->type_name("WORD");
  add_common(cmd, a->common);
  cmd->footer(std::string(kFlopsNote) +
              "\nExamples:\n"
              "  ridgeline kernel gemm --gpu h100_sxm --m 8192 --n 8192 --k 8192\n"
              "  ridgeline kernel gemm --gpu h100_sxm --m 1 --n 16384 --k 16384 --format json\n"
              "  ridgeline kernel gemm --gpu b200 --m 4096 --n 4096 --k 4096 --dtype nvfp4\n");
  cmd->callback([a, &rc] {
    rc = guarded([&] {
      const Options o = parse_common(a->common);
      const double m = dimension("--m", a->m), n = dimension("--n", a->n), k = dimension("--k", a->k);
      const double batch = dimension("--batch", a->batch);
      const spec::Dtype dt = parse_dtype_flag("--dtype", a->dtype, kGemmDtypes);
      const auto hw = resolve_gpu(a->common.gpu);
      require_tensor_cores(hw, a->dtype, dt);
      KernelRecord r;
      r.kernel = "gemm";
      r.cls = "gemm";
      r.shape = fmt::format("m={:.0f} n={:.0f} k={:.0f} batch={:.0f}", m, n, k, batch);
      r.dtype = std::string(spec::name(dt));
      emit(cost_sequence({graph::gemm_kernel(m, n, k, batch, dt)}, hw, o, r), o, a->common.output);
      return kExitOk;
    });
  });
}

struct AttentionArgs {
  CommonArgs common;
  std::string batch, heads, kv_heads, seq, kv_seq, head_dim;
  bool causal = false, bidirectional = false;
  std::string impl = "flash2", pass = "fwd+bwd", dtype = "bf16";
};

constexpr std::string_view kPasses[] = {"fwd", "bwd", "fwd+bwd"};

void register_attention(CLI::App* parent, int& rc) {
  auto a = std::make_shared<AttentionArgs>();
  auto* cmd = parent->add_subcommand(
      "attention", "Attention core: a fused kernel (flash, flash2, flash3, cudnn, triton, triton_legacy) or the naive sequence");
  cmd->add_option("--batch", a->batch, "Sequences")->required()->type_name("N");
  cmd->add_option("--heads", a->heads, "Query heads")->required()->type_name("N");
  cmd->add_option("--kv-heads", a->kv_heads, "K/V heads (GQA; default: --heads)")->type_name("N");
  cmd->add_option("--seq", a->seq, "Query length")->required()->type_name("N");
  cmd->add_option("--kv-seq", a->kv_seq,
                  "Key length (default: --seq). Causal with more keys than queries is a context-parallel rank "
                  "(keys = cp x queries): its queries are a head and a tail chunk of the sequence, costed as the "
                  "ring's cp calls, half the keys in all")
      ->type_name("N");
  cmd->add_option("--head-dim", a->head_dim, "Head dimension")->required()->type_name("N");
  auto* causal = cmd->add_flag("--causal", a->causal, "Mask keys after the query (the default)");
  auto* bidi = cmd->add_flag("--bidirectional", a->bidirectional, "No mask");
  causal->excludes(bidi);
  cmd->add_option("--impl", a->impl, "Implementation: " + spec::attention_choices() + " (default flash2)")
      ->type_name("WORD");
  cmd->add_option("--pass", a->pass, "fwd | bwd | fwd+bwd (the sum of both kernels; default)")->type_name("WORD");
  cmd->add_option("--dtype", a->dtype, dtype_help(kAttentionDtypes))->type_name("WORD");
  add_common(cmd, a->common);
  cmd->footer(std::string(kFlopsNote) +
              "\nExamples:\n"
              "  ridgeline kernel attention --gpu h100_sxm --batch 1 --heads 32 --kv-heads 8 --seq 8192 --head-dim 128\n"
              "  ridgeline kernel attention --gpu h100_sxm --batch 4 --heads 16 --seq 4096 --head-dim 128 "
              "--impl flash3 --pass fwd --format json\n"
              "  ridgeline kernel attention --gpu a100_sxm_80gb --batch 8 --heads 16 --seq 2048 --head-dim 64 "
              "--impl naive --bidirectional\n");
  cmd->callback([a, &rc] {
    rc = guarded([&] {
      const Options o = parse_common(a->common);
      graph::AttentionShape s;
      s.batch = dimension("--batch", a->batch);
      s.heads = dimension("--heads", a->heads);
      s.kv_heads = a->kv_heads.empty() ? s.heads : dimension("--kv-heads", a->kv_heads);
      s.q_len = dimension("--seq", a->seq);
      s.kv_len = a->kv_seq.empty() ? s.q_len : dimension("--kv-seq", a->kv_seq);
      s.head_dim = dimension("--head-dim", a->head_dim);
      s.causal = !a->bidirectional;
      if (std::fmod(s.heads, s.kv_heads) != 0)
        throw UsageError{"--heads", fmt::format("{:.0f} is not a multiple of --kv-heads {:.0f}", s.heads, s.kv_heads)};
      const auto impl = spec::parse_attention(a->impl);
      if (!impl)
        throw UsageError{"--impl", fmt::format("expected one of {}, got \"{}\"", spec::attention_choices(), a->impl)};
      if (std::find(std::begin(kPasses), std::end(kPasses), a->pass) == std::end(kPasses))
        throw UsageError{"--pass", fmt::format("expected one of {}, got \"{}\"", join_words(kPasses), a->pass)};
      const bool fwd = a->pass != "bwd", bwd = a->pass != "fwd";
      const spec::Dtype dt = parse_dtype_flag("--dtype", a->dtype, kAttentionDtypes);
      const auto hw = resolve_gpu(a->common.gpu);
      require_tensor_cores(hw, a->dtype, dt);
      if (*impl == spec::AttentionKind::kFlash3 && !hw.has_fa3())
        throw UsageError{"--impl", fmt::format("flash3 needs Hopper (wgmma and TMA); {} is {}", hw.name,
                                               spec::name(hw.generation))};
      std::vector<graph::Kernel> ks;
      if (*impl == spec::AttentionKind::kNaive) {
        if (fwd) ks = graph::naive_attention_kernels(s, dt, graph::AttentionPass::kForward);
        if (bwd)
          for (const auto& k : graph::naive_attention_kernels(s, dt, graph::AttentionPass::kBackward))
            ks.push_back(k);
      } else {
        const graph::Kernel f = graph::flash_attention_forward(s, *impl, dt, hw);
        if (fwd) ks.push_back(f);
        if (bwd) ks.push_back(graph::flash_attention_backward(f));
      }
      KernelRecord r;
      r.kernel = "attention";
      r.cls = "attention";
      r.shape = fmt::format("batch={:.0f} heads={:.0f} kv_heads={:.0f} seq={:.0f} kv_seq={:.0f} head_dim={:.0f} {}",
                            s.batch, s.heads, s.kv_heads, s.q_len, s.kv_len, s.head_dim,
                            s.causal ? "causal" : "bidirectional");
      r.dtype = std::string(spec::name(dt));
      r.impl = spec::to_string(*impl);
      r.pass = a->pass;
      emit(cost_sequence(ks, hw, o, r), o, a->common.output);
      return kExitOk;
    });
  });
}

/// The memory-bound classes share one body: parse, build, cost, print.
struct StreamArgs {
  CommonArgs common;
  std::string a, b, inputs = "1", dtype = "bf16", from = "bf16", to = "fp8";
  bool rms = false;
  bool tuned = false;  // elementwise, norm: a tuned kernel (graph::kImplTuned) rather than the framework's own
};

void register_stream(CLI::App* parent, int& rc, std::string_view which) {
  auto a = std::make_shared<StreamArgs>();
  CLI::App* cmd = nullptr;
  if (which == "elementwise") {
    cmd = parent->add_subcommand("elementwise", "A streaming elementwise op over N elements with 1-3 inputs");
    cmd->add_option("--elements", a->a, "Elements of the output")->required()->type_name("N");
    cmd->add_option("--inputs", a->inputs, "Input tensors: 1, 2 or 3 (default 1)")->type_name("N");
    cmd->add_flag("--tuned", a->tuned,
                  "A tuned kernel (torch.compile's or Liger's Triton, hand-written CUDA, or eager PyTorch over "
                  "contiguous inputs, which it vectorizes) rather than a framework's own op over a strided or "
                  "broadcast input (eager PyTorch's unvectorized loop, TorchScript-fused), which streams at 0.612 "
                  "of its rate");
    cmd->footer(
        "Counts: reads inputs x N, writes N elements; FLOPs N x max(1, inputs - 1).\n"
        "\nExamples:\n"
        "  ridgeline kernel elementwise --gpu h100_sxm --elements 268435456 --inputs 2\n");
  } else if (which == "norm") {
    cmd = parent->add_subcommand("norm", "A fused LayerNorm (default) or RMSNorm over T rows of H elements");
    cmd->add_option("--tokens", a->a, "Rows (tokens)")->required()->type_name("N");
    cmd->add_option("--hidden", a->b, "Elements per row")->required()->type_name("N");
    cmd->add_flag("--rms", a->rms, "RMSNorm instead of LayerNorm");
    cmd->add_flag("--tuned", a->tuned,
                  "A tuned kernel (Apex's, Transformer Engine's, torch.compile's or Liger's) rather than PyTorch's "
                  "eager norm, which streams at 0.625 of its rate");
    cmd->footer(
        "Counts: LayerNorm reads T H + 2 H elements, writes T H elements and 8 T bytes (fp32 mean, rstd), 8 FLOP per\n"
        "element; RMSNorm reads T H + H, writes T H and 4 T bytes (fp32 rstd), 4 FLOP per element.\n"
        "\nExamples:\n"
        "  ridgeline kernel norm --gpu h100_sxm --tokens 8192 --hidden 4096 --rms\n");
  } else if (which == "softmax") {
    cmd = parent->add_subcommand("softmax", "Softmax over each of R rows of C elements");
    cmd->add_option("--rows", a->a, "Rows")->required()->type_name("N");
    cmd->add_option("--cols", a->b, "Elements per row")->required()->type_name("N");
    cmd->footer(
        "Counts: reads and writes R C elements; 5 FLOP per element (max, subtract, exp, sum, divide).\n"
        "\nExamples:\n"
        "  ridgeline kernel softmax --gpu h100_sxm --rows 262144 --cols 4096\n");
  } else {
    cmd = parent->add_subcommand("cast", "A type cast of N elements");
    cmd->add_option("--elements", a->a, "Elements")->required()->type_name("N");
    cmd->add_option("--from", a->from, "Source type: " + join_words(kCastDtypes) + " (default bf16)")
        ->type_name("WORD");
    cmd->add_option("--to", a->to, "Target type: " + join_words(kCastDtypes) + " (default fp8)")->type_name("WORD");
    cmd->footer(
        "Counts: reads N source and writes N target elements; 1 FLOP per element, 2 for an 8-bit target (scaled).\n"
        "\nExamples:\n"
        "  ridgeline kernel cast --gpu h100_sxm --elements 67108864 --from bf16 --to fp8\n");
  }
  if (which != "cast") cmd->add_option("--dtype", a->dtype, dtype_help(kStreamDtypes))->type_name("WORD");
  add_common(cmd, a->common);
  const std::string kind(which);
  cmd->callback([a, kind, &rc] {
    rc = guarded([&] {
      const Options o = parse_common(a->common);
      KernelRecord r;
      r.kernel = kind;
      graph::Kernel k;
      if (kind == "elementwise") {
        const double n = dimension("--elements", a->a);
        std::string error;
        const auto inputs = spec::parse_whole_number(a->inputs, 1, 3, error);
        if (!inputs) throw UsageError{"--inputs", error};
        const spec::Dtype dt = parse_dtype_flag("--dtype", a->dtype, kStreamDtypes);
        k = graph::elementwise_kernel(n, static_cast<int>(*inputs), dt);
        r.shape = fmt::format("elements={:.0f} inputs={}", n, *inputs);
      } else if (kind == "norm") {
        const double t = dimension("--tokens", a->a), h = dimension("--hidden", a->b);
        const spec::Dtype dt = parse_dtype_flag("--dtype", a->dtype, kStreamDtypes);
        k = graph::norm_kernel(t, h, a->rms, dt);
        r.shape = fmt::format("tokens={:.0f} hidden={:.0f} {}", t, h, a->rms ? "rms" : "layer");
      } else if (kind == "softmax") {
        const double rows = dimension("--rows", a->a), cols = dimension("--cols", a->b);
        const spec::Dtype dt = parse_dtype_flag("--dtype", a->dtype, kStreamDtypes);
        k = graph::softmax_kernel(rows, cols, dt);
        r.shape = fmt::format("rows={:.0f} cols={:.0f}", rows, cols);
      } else {
        const double n = dimension("--elements", a->a);
        const spec::Dtype from = parse_dtype_flag("--from", a->from, kCastDtypes);
        const spec::Dtype to = parse_dtype_flag("--to", a->to, kCastDtypes);
        k = graph::cast_kernel(n, from, to);
        r.shape = fmt::format("elements={:.0f} from={} to={}", n, spec::name(from), spec::name(to));
      }
      if (a->tuned) k.impl = graph::kImplTuned;
      r.cls = std::string(spec::name(k.cls));
      r.dtype = std::string(spec::name(k.dtype));
      const auto hw = resolve_gpu(a->common.gpu);
      emit(cost_sequence({k}, hw, o, r), o, a->common.output);
      return kExitOk;
    });
  });
}

}  // namespace

void register_kernel(Commands& commands, int& rc) {
  auto* cmd = commands.add(
      "kernel", "Cost one kernel on one GPU: a GEMM, attention, or a memory-bound class, by shape");
  if (!cmd) return;
  cmd->require_subcommand(1);
  register_gemm(cmd, rc);
  register_attention(cmd, rc);
  for (std::string_view which : {"elementwise", "norm", "softmax", "cast"}) register_stream(cmd, rc, which);
  cmd->footer(std::string(kFlopsNote) +
              "\nExamples:\n"
              "  ridgeline kernel gemm --gpu h100_sxm --m 8192 --n 8192 --k 8192\n"
              "  ridgeline kernel attention --gpu h100_sxm --batch 1 --heads 32 --kv-heads 8 --seq 8192 --head-dim 128\n"
              "  ridgeline kernel norm --gpu a100_sxm_80gb --tokens 16384 --hidden 8192 --format json\n"
              "  ridgeline kernel cast --gpu h100_sxm --elements 67108864 --from bf16 --to fp8\n");
}

}  // namespace ridgeline::cli
