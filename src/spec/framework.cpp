#include "ridgeline/spec/framework.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <memory>
#include <mutex>

#include "ridgeline/spec/yaml_reader.hpp"

namespace ridgeline::spec {

namespace fs = std::filesystem;

std::string data_dir() {
  if (const char* d = std::getenv("RIDGELINE_DATA_DIR"); d && *d) return d;
  if (fs::exists("hardware_profiles") && fs::exists("models")) return ".";
  return RIDGELINE_SOURCE_DIR;
}

namespace {

std::optional<ParamSharding> parse_sharding(std::string_view s) {
  if (s == "ddp") return ParamSharding::kDdp;
  if (s == "distributed_optimizer") return ParamSharding::kDistributedOptimizer;
  if (s == "fsdp1") return ParamSharding::kFsdp1;
  if (s == "fsdp2") return ParamSharding::kFsdp2;
  if (s == "zero") return ParamSharding::kZero;
  return std::nullopt;
}

constexpr const char* kShardingChoices = "ddp, distributed_optimizer, fsdp1, fsdp2, zero";

/// Each behaviour is a map {value, source}: the value and where it comes from.
template <class Read>
void behaviour(MapReader& r, const std::string& key, Read read, bool required = true) {
  if (!required && !r.has(key)) return;
  auto sub = r.map(key, true);
  if (!sub) return;
  read(*sub);
  sub->string("source", true);
  sub->finish();
}

/// The profiles in data_dir()/frameworks: their ids and files from the
/// folder's listing (megatron first, then by file name), each profile read
/// the first time it is asked for. A plan names one framework; only listing
/// or comparing them all reads every file.
class Registry {
 public:
  Registry() {
    const fs::path dir = fs::path(data_dir()) / "frameworks";
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().extension() == ".yaml") paths_.push_back(e.path().string());
    std::sort(paths_.begin(), paths_.end());
    for (const auto& p : paths_) ids_.push_back(fs::path(p).stem().string());
    const auto mega = std::find(ids_.begin(), ids_.end(), "megatron");
    if (mega == ids_.end())
      throw support::SpecError({dir.string(), 0, 0}, "framework",
                               "no megatron.yaml: the default framework profile is missing");
    const auto m = mega - ids_.begin();
    std::rotate(ids_.begin(), mega, mega + 1);
    std::rotate(paths_.begin(), paths_.begin() + m, paths_.begin() + m + 1);
    if (ids_.size() > 255)
      throw support::SpecError({dir.string(), 0, 0}, "framework", "more than 255 framework profiles");
    specs_.resize(ids_.size());
    loaded_ = std::make_unique<std::atomic<bool>[]>(ids_.size());
  }

  const std::vector<std::string>& ids() const { return ids_; }

  /// Profile `i`, read on first use (any thread; the evaluation's hot path
  /// pays one atomic load). A malformed file throws, and throws again when asked again.
  const FrameworkSpec& at(std::size_t i) {
    if (!loaded_[i].load(std::memory_order_acquire)) {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (!loaded_[i].load(std::memory_order_relaxed)) {
        specs_[i] = load_framework(paths_[i]);
        loaded_[i].store(true, std::memory_order_release);
      }
    }
    return specs_[i];
  }

  /// Every profile, each read if it was not yet, in id order (megatron first).
  const std::vector<FrameworkSpec>& all() {
    for (std::size_t i = 0; i < specs_.size(); ++i) at(i);
    return specs_;
  }

 private:
  std::vector<std::string> ids_;
  std::vector<std::string> paths_;
  std::vector<FrameworkSpec> specs_;  // sized once, so references to it stay valid
  std::unique_ptr<std::atomic<bool>[]> loaded_;
  std::mutex mutex_;
};

Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

namespace {

/// A behaviour's `value` that is one of two words: `on` reads true, `off`
/// false; the choices listed off first, or on first when `on_first`.
std::optional<bool> two_words(MapReader& m, std::string_view off, std::string_view on, bool on_first = false) {
  return m.word(
      "value",
      [=](std::string_view s) -> std::optional<bool> {
        if (s == on) return true;
        if (s == off) return false;
        return std::nullopt;
      },
      on_first ? fmt::format("{}, {}", on, off) : fmt::format("{}, {}", off, on), true);
}

}  // namespace

FrameworkSpec load_framework(const std::string& path) {
  YamlNode root = load_yaml_file(path);
  support::DiagnosticList d;
  FrameworkSpec f;
  f.source_file = path;
  f.id = fs::path(path).stem().string();
  MapReader r(root, path, "", d);
  if (auto s = r.string("name", true)) f.name = *s;
  behaviour(r, "fusion", [&](MapReader& m) {
    if (auto v = m.word("value", parse_fusion, fusion_choices(), true)) f.fusion = *v;
  });
  behaviour(r, "attention", [&](MapReader& m) {
    if (auto v = m.word("value", parse_attention, attention_choices(), true)) f.attention = *v;
    if (!m.has("by_generation")) return;
    YamlNode seq = m.sequence("by_generation", true);
    if (!seq.IsDefined()) return;
    for (std::size_t i = 0; i < seq.size(); ++i) {
      MapReader item(seq[i], path, fmt::format("attention.by_generation[{}]", i), d);
      const auto g = item.word("generation", parse_generation, generation_choices(), true);
      const auto k = item.word("value", parse_attention, attention_choices(), true);
      item.finish();
      if (g && k) f.attention_by_generation.push_back({*g, *k});
    }
  });
  behaviour(r, "cross_entropy", [&](MapReader& m) {
    auto fused = [](std::string_view s) -> std::optional<bool> {
      if (s == "fused") return true;
      if (s == "eager") return false;
      return std::nullopt;
    };
    if (auto v = m.word("value", fused, "fused, eager", true)) f.fused_cross_entropy = *v;
    f.fused_cross_entropy_compiled = f.fused_cross_entropy;
    if (auto v = m.word("compiled", fused, "fused, eager")) f.fused_cross_entropy_compiled = *v;
    if (auto v = m.boolean("in_place")) f.cross_entropy_in_place = *v;
    if (auto v = m.boolean("chunked")) f.chunked_cross_entropy = *v;
  });
  behaviour(r, "train_metrics", [&](MapReader& m) {
    if (auto v = m.integer("value", true, 0, 16)) f.train_metrics = static_cast<int>(*v);
  }, false);
  behaviour(r, "rms_norm", [&](MapReader& m) {
    if (auto v = m.word("value", parse_rms_norm, rms_norm_choices(), true)) f.eager_rms_norm = *v;
  }, false);
  behaviour(r, "gate_up", [&](MapReader& m) {
    if (auto v = two_words(m, "separate", "fused")) f.fused_gate_up = *v;
  }, false);
  behaviour(r, "dispatch", [&](MapReader& m) {
    if (auto v = m.quantity("eager", units::Dimension::kTime, true, true)) f.dispatch_s = *v;
    if (auto v = m.quantity("compiled", units::Dimension::kTime, true, true)) f.dispatch_compiled_s = *v;
  });
  behaviour(r, "sharding", [&](MapReader& m) {
    if (auto v = m.word("value", parse_sharding, kShardingChoices, true)) f.sharding = *v;
  });
  behaviour(r, "grad_reduce", [&](MapReader& m) {
    auto v = two_words(m, "per_step", "per_microbatch");
    if (v) f.grad_reduce_per_microbatch = *v;
    if (m.has("dtype_bytes")) {
      if (auto b = m.number("dtype_bytes", false, 1, 8)) f.reduce_bytes = *b;
    }
  });
  behaviour(r, "pp_params", [&](MapReader& m) {
    if (auto v = two_words(m, "sharded", "unsharded")) f.pp_params_unsharded = *v;
  }, false);
  behaviour(r, "gradients", [&](MapReader& m) {
    if (auto v = two_words(m, "persistent", "freed_each_step")) f.grads_freed_each_step = *v;
  }, false);
  behaviour(r, "pp_grads", [&](MapReader& m) {
    if (auto v = two_words(m, "sharded", "unsharded")) f.pp_grads_unsharded = *v;
  }, false);
  behaviour(r, "main_grads", [&](MapReader& m) {
    auto v = two_words(m, "working", "fp32_with_bf16");
    if (v) f.fp32_main_grads_with_bf16 = *v;
  }, false);
  behaviour(r, "overlap_param_gather", [&](MapReader& m) {
    if (auto v = m.boolean("value", true)) f.overlap_param_gather = *v;
  }, false);
  behaviour(r, "tp_overlap_mechanism", [&](MapReader& m) {
    auto v = two_words(m, "nccl", "userbuffers");
    if (v && *v) {
      if (auto n = m.number("comm_sms", true, 1, 1024)) f.tp_overlap_comm_sms = *n;
    }
  }, false);
  behaviour(r, "cp_merge", [&](MapReader& m) {
    if (auto v = m.number("forward_bytes", true, 0, 1024)) f.cp_merge_forward_bytes = *v;
    if (auto v = m.number("backward_bytes", true, 0, 1024)) f.cp_merge_backward_bytes = *v;
    if (auto v = m.integer("forward_kernels", true, 0, 64)) f.cp_merge_forward_kernels = static_cast<int>(*v);
    if (auto v = m.integer("backward_kernels", true, 0, 64)) f.cp_merge_backward_kernels = static_cast<int>(*v);
    f.cp_merge_forward_bytes_compiled = f.cp_merge_forward_bytes;
    f.cp_merge_forward_kernels_compiled = f.cp_merge_forward_kernels;
    if (auto c = m.map("compiled")) {
      if (auto v = c->number("forward_bytes", true, 0, 1024)) f.cp_merge_forward_bytes_compiled = *v;
      if (auto v = c->integer("forward_kernels", true, 0, 64))
        f.cp_merge_forward_kernels_compiled = static_cast<int>(*v);
      c->finish();
    }
  }, false);
  behaviour(r, "zero3_fetch", [&](MapReader& m) {
    auto v = two_words(m, "per_layer", "per_module");
    if (v && *v) {
      if (auto n = m.number("bucket_elements", true, 1, 1e12)) f.zero3_fetch_bucket_elements = *n;
    }
  }, false);
  behaviour(r, "pp_p2p_overlap", [&](MapReader& m) {
    auto v = two_words(m, "never", "interleaved");
    if (v) f.pp_p2p_overlap_interleaved = *v;
  }, false);
  behaviour(r, "tp_overlap_hidden", [&](MapReader& m) {
    if (auto v = m.number("value", true, 0, 1)) f.tp_overlap_hidden = *v;
  });
  behaviour(r, "tp_backward_overlap", [&](MapReader& m) {
    if (auto v = m.boolean("value", true)) f.tp_backward_overlap = *v;
  }, false);
  behaviour(r, "allocator_reserve", [&](MapReader& m) {
    if (auto v = m.number("value", true, 0, 1)) f.allocator_reserve = *v;
  });
  behaviour(r, "recompute", [&](MapReader& m) {
    YamlNode seq = m.sequence("value", true);
    if (!seq.IsDefined()) return;
    for (std::size_t i = 0; i < seq.size(); ++i) {
      MapReader item(seq[i], path, fmt::format("recompute.value[{}]", i), d);
      RecomputeName n;
      if (auto s = item.string("name", true)) n.name = *s;
      if (auto s = item.string("as", true)) {
        n.maps_to = *s;
        if (auto k = parse_recompute(*s)) f.recompute_kinds.push_back(k->kind);
        else item.error_at("as", fmt::format("expected one of {}, got \"{}\"", recompute_choices(), *s));
      }
      item.finish();
      f.recompute.push_back(std::move(n));
    }
  });
  behaviour(r, "sequence_parallel", [&](MapReader& m) {
    auto v = two_words(m, "off", "with_tp", true);
    if (v) f.sequence_parallel_with_tp = *v;
  }, false);
  behaviour(r, "refuses", [&](MapReader& m) {
    if (auto v = m.boolean("zero2_with_pp", true)) f.refuses_zero2_with_pp = *v;
    if (auto v = m.string("zero2_with_pp_why")) f.zero2_with_pp_why = *v;
    if (auto v = m.boolean("tp_beyond_kv_heads")) f.refuses_tp_beyond_kv_heads = *v;
    if (auto v = m.boolean("tensor_parallel")) f.refuses_tp = *v;
    if (auto v = m.boolean("pipeline_parallel")) f.refuses_pp = *v;
    if (auto v = m.string("model_parallel_why")) f.model_parallel_why = *v;
    if (auto v = m.boolean("interleave_indivisible_microbatches", true))
      f.interleave_needs_divisible_microbatches = *v;
    if (auto v = m.boolean("indivisible_layers")) f.refuses_indivisible_layers = *v;
  });
  behaviour(r, "optimizer_in_backward", [&](MapReader& m) {
    if (auto v = m.boolean("value", true)) f.optimizer_in_backward = *v;
  }, false);
  behaviour(r, "paged_optimizer", [&](MapReader& m) {
    if (auto v = m.boolean("value", true)) f.paged_optimizer = *v;
  }, false);
  behaviour(r, "offload", [&](MapReader& m) {
    if (auto v = m.boolean("optimizer", true)) f.offload_optimizer = *v;
    if (auto v = m.boolean("params", true)) f.offload_params = *v;
    if (auto v = m.boolean("activations")) f.offload_activations = *v;
  }, false);
  r.finish();
  d.throw_if_errors();
  return f;
}

AttentionKind FrameworkSpec::attention_on(Generation g) const {
  for (const auto& a : attention_by_generation)
    if (a.generation == g) return a.kind;
  return attention;
}

AttentionKind attention_on(const MicrobatchPlan& p, Generation g) {
  return p.attention_given ? p.attention : framework(p.framework).attention_on(g);
}

CrossEntropy cross_entropy_of(const MicrobatchPlan& p) {
  if (p.cross_entropy_given) return p.cross_entropy;
  const FrameworkSpec& fw = framework(p.framework);
  const bool fused = p.fusion == Fusion::kCompiled ? fw.fused_cross_entropy_compiled : fw.fused_cross_entropy;
  return fused ? CrossEntropy::kFused : CrossEntropy::kEager;
}

double zero3_gathers_per_layer(const FrameworkSpec& f, const ModelSpec& m, int tp, int ep) {
  const double bucket = f.zero3_fetch_bucket_elements;
  if (bucket <= 0) return 1;
  const double t = std::max(1, tp);
  const double h = m.hidden, ffn = m.ffn_hidden;
  const double fc1 = h * ffn * (is_gated(m.activation) ? 2 : 1) / t, fc2 = ffn * h / t;
  std::vector<double> tensors = {h * (m.q_dim() + 2 * m.kv_dim()) / t, m.q_dim() * h / t};
  const double local_experts = m.is_moe() ? std::max(1.0, static_cast<double>(m.moe.experts) / std::max(1, ep)) : 0.0;
  const double dense_mlps = m.is_moe() ? 0.0 : 1.0;
  double calls = 0, small = 0;
  auto add = [&](double elements, double n) {
    if (elements >= bucket) calls += n;
    else small += elements * n;
  };
  for (const double e : tensors) add(e, 1);
  add(fc1, dense_mlps + local_experts);
  add(fc2, dense_mlps + local_experts);
  return calls + std::ceil(small / bucket);
}

bool overlap_param_gather_of(const PlanSpec& p) {
  return p.parallel.overlap_param_gather || framework(p.framework).overlap_param_gather;
}

void apply_generation_defaults(PlanSpec& p, Generation g) {
  if (!p.attention_given) p.attention = framework(p.framework).attention_on(g);
}

const std::vector<FrameworkSpec>& frameworks() { return registry().all(); }

namespace detail {

std::atomic<const FrameworkSpec*> frameworks_read[256];

const FrameworkSpec& read_framework(std::uint8_t index) {
  Registry& r = registry();
  const FrameworkSpec& f = r.at(index < r.ids().size() ? index : 0);
  frameworks_read[index].store(&f, std::memory_order_release);
  return f;
}

}  // namespace detail

std::optional<std::uint8_t> find_framework(std::string_view id) {
  const auto& ids = registry().ids();
  for (std::size_t i = 0; i < ids.size(); ++i)
    if (ids[i] == id) return static_cast<std::uint8_t>(i);
  return std::nullopt;
}

std::size_t framework_count() { return registry().ids().size(); }

const std::string& framework_id(std::uint8_t index) {
  const auto& ids = registry().ids();
  return ids[index < ids.size() ? index : 0];
}

std::optional<Recompute> framework_recompute(const FrameworkSpec& f, std::string_view name) {
  for (const auto& r : f.recompute) {
    std::string_view n = r.name;
    if (n.ends_with(":K")) {
      n.remove_suffix(1);  // "selective_layer:"
      if (!name.starts_with(n)) continue;
      // Ridgeline's word of the entry's kind ("every:2" -> "every:"), then K.
      const std::string_view as = r.maps_to;
      const std::string kind(as.substr(0, as.find(':') + 1));
      return parse_recompute((kind.empty() ? "every:" : kind) + std::string(name.substr(n.size())));
    }
    if (n == name) return parse_recompute(r.maps_to);
  }
  return std::nullopt;
}

std::string framework_choices() {
  std::vector<std::string> ids = registry().ids();
  std::sort(ids.begin(), ids.end());
  std::string s;
  for (std::size_t i = 0; i < ids.size(); ++i) s += (i ? ", " : "") + ids[i];
  return s;
}

}  // namespace ridgeline::spec
