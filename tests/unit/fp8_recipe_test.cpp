// fp8 and NVFP4 linear layers as Transformer Engine runs them
// (techniques/precision.cpp, spec::quant_recipe), and the power-limit plan
// field. Expected values are hand computations over GPT-3 Medium
// (models/gpt3_350m.yaml: hidden h = 1024, FFN f = 4096, 16 heads of 64, GeLU,
// 24 layers) at micro-batch 1, sequence 2048: T = 2048 tokens, TP 1.
// Per decoder layer, the four linears' input X and output gradient dY:
//   QKV   X = T h = 2,097,152   dY = T 3h = 6,291,456
//   out   X = T h = 2,097,152   dY = T h  = 2,097,152
//   up    X = T h = 2,097,152   dY = T f  = 8,388,608
//   down  X = T f = 8,388,608   dY = T h  = 2,097,152
// so all four X: 14,680,064 elements, all four dY: 18,874,368.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "ridgeline/cost/cost.hpp"
#include "ridgeline/engine/engine.hpp"
#include "ridgeline/memory/memory.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/plan_fields.hpp"
#include "ridgeline/support/diagnostics.hpp"
#include "ridgeline/techniques/passes.hpp"
#include "test_support.hpp"

using namespace ridgeline;
namespace fs = std::filesystem;
using graph::Op;

namespace {

spec::PlanSpec fp8_plan(spec::Fp8Recipe r) {
  spec::PlanSpec p;
  p.micro_batch = 1;
  p.seq_len = 2048;
  p.precision = spec::Precision::kFp8;
  p.fp8_recipe = r;
  p.fusion = spec::Fusion::kFused;
  return p;
}

graph::Graph step_graph(const spec::PlanSpec& p) {
  graph::Graph g;
  techniques::build_step(g, test::model("gpt3_350m"), p, test::gpu("h100_sxm"));
  return g;
}

/// A decoder layer's cast and amax kernels of one phase whose name starts with `prefix`.
struct Casts {
  int kernels = 0;
  double bytes = 0;
};
Casts layer_casts(const graph::Graph& g, spec::Phase phase, std::string_view prefix) {
  Casts c;
  for (const auto& k : g.kernels)
    if (k.has(graph::kLayer) && k.phase == phase && (k.op == Op::kCast || k.op == Op::kAmax) &&
        k.name.starts_with(prefix)) {
      ++c.kernels;
      c.bytes += k.hbm_bytes();
    }
  return c;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const fs::path dir = fs::temp_directory_path() / ("ridgeline_fp8_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path p = dir / name;
  std::ofstream(p) << text;
  return p.string();
}

std::vector<std::string> plan_errors(const std::string& path) {
  std::vector<std::string> out;
  try {
    spec::load_plan(path);
  } catch (const support::SpecError& e) {
    for (const auto& d : e.diagnostics()) out.push_back(d.format());
  }
  return out;
}

}  // namespace

TEST_CASE("fp8: the LM head stays bf16 forward and backward; every layer linear runs fprop, dgrad, wgrad in fp8") {
  const graph::Graph g = step_graph(fp8_plan(spec::Fp8Recipe::kDelayed));
  int head = 0;
  for (const auto& k : g.kernels)
    if (k.op == Op::kLmHead && k.cls == spec::KernelClass::kGemm) {
      ++head;
      CHECK(k.dtype == spec::Dtype::kBf16);
      CHECK_FALSE(k.has(graph::kFp8Gemm));
    }
  CHECK(head == 3);  // fprop, dgrad, wgrad
  for (Op op : {Op::kQkv, Op::kOut, Op::kUp, Op::kDown}) {
    int n = 0;
    for (const auto& k : g.kernels)
      if (k.op == op && k.cls == spec::KernelClass::kGemm) {
        ++n;
        CHECK(k.dtype == spec::Dtype::kFp8E4M3);
        CHECK(k.has(graph::kFp8Gemm));
      }
    CHECK_MESSAGE(n == 3, static_cast<int>(op));
  }
}

TEST_CASE("fp8: cast kernels per layer, delayed vs tensorwise") {
  // Delayed, fusion fused: QKV's and up's inputs are written in fp8 by the
  // LayerNorm (TE LayerNormLinear), so the forward casts out's and down's
  // inputs: 2 cast_transpose kernels reading 2 and writing 1 + 1 bytes per
  // element: 4 x (2,097,152 + 8,388,608) = 41,943,040 bytes. Backward: one
  // cast_transpose (E5M2) per output gradient, 4 x 18,874,368 = 75,497,472.
  const graph::Graph d = step_graph(fp8_plan(spec::Fp8Recipe::kDelayed));
  Casts f = layer_casts(d, spec::Phase::kForward, "fp8_");
  CHECK(f.kernels == 2);
  CHECK(f.bytes == doctest::Approx(41'943'040));
  Casts b = layer_casts(d, spec::Phase::kBackward, "fp8_");
  CHECK(b.kernels == 4);
  CHECK(b.bytes == doctest::Approx(75'497'472));
  for (const auto& k : d.kernels)
    if (k.phase == spec::Phase::kBackward && k.op == Op::kCast && k.has(graph::kLayer))
      CHECK(k.dtype == spec::Dtype::kFp8E5M2);

  // Tensorwise: no cast can be fused (the scale needs the whole tensor's
  // amax first), and each cast follows an amax pass reading 2 bytes per
  // element and writing one fp32. Forward: 4 amax + 4 cast_transpose,
  // 2 x 14,680,064 + 4 x 4 + 4 x 14,680,064 = 88,080,400 bytes; backward:
  // 2 x 18,874,368 + 16 + 4 x 18,874,368 = 113,246,224.
  const graph::Graph t = step_graph(fp8_plan(spec::Fp8Recipe::kTensorwise));
  f = layer_casts(t, spec::Phase::kForward, "fp8_");
  CHECK(f.kernels == 8);
  CHECK(f.bytes == doctest::Approx(88'080'400));
  b = layer_casts(t, spec::Phase::kBackward, "fp8_");
  CHECK(b.kernels == 8);
  CHECK(b.bytes == doctest::Approx(113'246'224));

  // Eager fusion: delayed scaling casts all four inputs in kernels of their own.
  spec::PlanSpec eager = fp8_plan(spec::Fp8Recipe::kDelayed);
  eager.fusion = spec::Fusion::kEager;
  f = layer_casts(step_graph(eager), spec::Phase::kForward, "fp8_");
  CHECK(f.kernels == 4);
  CHECK(f.bytes == doctest::Approx(4.0 * 14'680'064));
}

TEST_CASE("fp8: a frozen base (LoRA) quantizes its inputs row-wise only; the output gradients keep both copies") {
  // GPT-3 350M (h 1,024, FFN 4,096), 2,048 tokens, delayed scaling, fused:
  // the forward casts out's and down's inputs. Full: cast_transpose, read 2
  // and write 1 + 1 bytes per element, 4 x (2,097,152 + 8,388,608) =
  // 41,943,040 bytes. LoRA (no weight gradient: Transformer Engine
  // quantizes the input row-wise only, linear.py set_usage(columnwise=
  // backward_needs_input)): read 2, write 1, 3 x 10,485,760 = 31,457,280.
  // The backward's output-gradient casts are the same either way.
  spec::PlanSpec p = fp8_plan(spec::Fp8Recipe::kDelayed);
  const graph::Graph full = step_graph(p);
  p.finetune.mode = spec::FinetuneMode::kLora;
  const graph::Graph lora = step_graph(p);
  const Casts fl = layer_casts(full, spec::Phase::kForward, "fp8_");
  const Casts ll = layer_casts(lora, spec::Phase::kForward, "fp8_");
  CHECK(fl.bytes == doctest::Approx(41'943'040));
  CHECK(ll.kernels == 2);
  CHECK(ll.bytes == doctest::Approx(31'457'280));
  CHECK(layer_casts(lora, spec::Phase::kForward, "fp8_quantize_input_rowwise").kernels == 2);
  CHECK(layer_casts(lora, spec::Phase::kBackward, "fp8_").bytes ==
        doctest::Approx(layer_casts(full, spec::Phase::kBackward, "fp8_").bytes));
}

TEST_CASE("fp8: mxfp8 quantizes row-wise and column-wise copies in kernels of their own") {
  // Each tensor: two quantizations, each reading 2 bytes and writing
  // 1 + 1/32 bytes per element. Forward, four inputs: 2 x 3.03125 x
  // 14,680,064 = 88,997,888 bytes in 8 kernels.
  const graph::Graph g = step_graph(fp8_plan(spec::Fp8Recipe::kMxfp8));
  const Casts f = layer_casts(g, spec::Phase::kForward, "fp8_");
  CHECK(f.kernels == 8);
  CHECK(f.bytes == doctest::Approx(88'997'888));
}

TEST_CASE("fp8: rowwise (torchao) scales every GEMM operand per row, weights included, every micro-batch") {
  // torchao/float8/float8_linear.py (pytorch/ao 36027d8): fprop casts X and
  // W (lines 53-88), dgrad dY and W along the other dimension, wgrad dY and
  // the saved 16-bit X along the tokens (lines 108-195); each cast an amax
  // pass (read 2 bytes per element, write an fp32 per row) and the cast
  // (read 2, write 1 per element and the fp32 per row). Per layer of GPT-3
  // Medium, with (K, N) = QKV (1024, 3072), out (1024, 1024), up (1024,
  // 4096), down (4096, 1024), T = 2048:
  //   X   elements 14,680,064 (above), W elements 12 h^2 = 12,582,912;
  //   forward  X row-wise: 8,192 rows (T per linear), W row-wise: N rows,
  //            3072 + 1024 + 4096 + 1024 = 9,216;
  //            X: 5 x 14,680,064 + 2 x 4 x 8,192 = 73,465,856
  //            W: 5 x 12,582,912 + 2 x 4 x 9,216 = 62,988,288
  //            136,454,144 bytes in 16 kernels;
  //   backward dY (18,874,368 elements) row-wise: 8,192 rows; column-wise:
  //            N = 9,216 rows; W and X column-wise: K = 1024 + 1024 + 1024 +
  //            4096 = 7,168 rows each:
  //            5 x 18,874,368 x 2 + 8 x (8,192 + 9,216)
  //            + 5 x 12,582,912 + 8 x 7,168 + 5 x 14,680,064 + 8 x 7,168
  //            = 325,312,512 bytes in 32 kernels (four copies per linear).
  // The scale overhead of X's row-wise copy: 4 bytes per 1,024-element row,
  // 4 / 1024 = 0.39% of its 1-byte elements.
  const graph::Graph g = step_graph(fp8_plan(spec::Fp8Recipe::kRowwise));
  Casts f = layer_casts(g, spec::Phase::kForward, "fp8_");
  CHECK(f.kernels == 16);
  CHECK(f.bytes == doctest::Approx(136'454'144).epsilon(1e-12));
  Casts b = layer_casts(g, spec::Phase::kBackward, "fp8_");
  CHECK(b.kernels == 32);
  CHECK(b.bytes == doctest::Approx(325'312'512).epsilon(1e-12));
  for (const auto& k : g.kernels) {
    if (k.name == "fp8_quantize_input_rowwise") {
      // The down projection's input: T x 4096, T rows of 4096 elements.
      if (k.read_bytes == 2.0 * 2048 * 4096) CHECK(k.write_bytes == 2048.0 * 4096 + 4.0 * 2048);
    }
    // E4M3 throughout: torchao's rowwise casts the gradients to E4M3 too.
    if (k.op == Op::kCast && k.has(graph::kLayer)) CHECK(k.dtype == spec::Dtype::kFp8E4M3);
    // No quantized weights kept across micro-batches: no per-step cast.
    CHECK(k.name != "fp8_weight_cast_transpose");
  }
  // Memory: the 16-bit input saved (ctx.save_for_backward(input_hp,
  // weight_hp_t), line 45), no quantized weight copy and no scaling state:
  // weights, activations and buffers as under bf16. Transformer Engine's
  // tensorwise keeps two 1-byte copies per linear weight on Hopper (no
  // non-TN fp8 GEMMs): 2 x 24 x 12 x 1024^2 = 603,979,776 bytes more.
  const auto m = test::model("gpt3_350m");
  const auto hw = test::gpu("h100_sxm");
  spec::PlanSpec bf16 = fp8_plan(spec::Fp8Recipe::kRowwise);
  bf16.precision = spec::Precision::kBf16;
  const auto mem = [&](const spec::PlanSpec& p) { return memory::estimate(step_graph(p), m, p, hw, 1); };
  const auto row = mem(fp8_plan(spec::Fp8Recipe::kRowwise)), base = mem(bf16);
  CHECK(row.weights == doctest::Approx(base.weights).epsilon(1e-12));
  CHECK(row.activations == doctest::Approx(base.activations).epsilon(1e-12));
  CHECK(row.buffers == doctest::Approx(base.buffers).epsilon(1e-12));
  CHECK(mem(fp8_plan(spec::Fp8Recipe::kTensorwise)).weights - base.weights == doctest::Approx(603'979'776.0));
}

TEST_CASE("fp8: rowwise has no fp8 primary weights, and torchtitan's recipe_name imports it") {
  spec::PlanSpec p = fp8_plan(spec::Fp8Recipe::kRowwise);
  p.fp8_primary_weights = true;
  const auto pred = engine::evaluate(test::model("gpt3_350m"), p, test::gpu("h100_sxm"));
  CHECK(pred.status == engine::Status::kInvalid);
  CHECK(pred.problem.field == "fp8.primary_weights");
  // torchtitan/config/job_config.py (238fa99) line 738: recipe_name
  // "tensorwise", "rowwise" or "rowwise_with_gw_hp".
  const std::string toml = write_temp("rowwise.toml",
                                      "[model]\nconverters = [\"quantize.linear.float8\"]\n"
                                      "[quantize.linear.float8]\nrecipe_name = \"rowwise\"\n");
  const auto r = test::run_cli("predict --model gpt3_350m --dp 8 --print-plan --from-torchtitan " + toml);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.out.find("fp8_recipe           rowwise") != std::string::npos);
  // Another recipe name: the error at its value.
  const std::string bad = write_temp("bad.toml",
                                     "[model]\nconverters = [\"quantize.linear.float8\"]\n"
                                     "[quantize.linear.float8]\nrecipe_name = \"blockwise\"\n");
  const auto e = test::run_cli("predict --model gpt3_350m --dp 8 --from-torchtitan " + bad);
  CHECK(e.status == 2);
  CHECK(test::first_line(e.err) == bad + ":4:15: error: quantize.linear.float8.recipe_name: fp8 recipe "
                                         "\"blockwise\" is not one of torchao's: tensorwise, rowwise, "
                                         "rowwise_with_gw_hp\n");
}

TEST_CASE("fp8: rowwise_with_gw_hp (torchao) imports from both torchtitan spellings and shows in the plan") {
  // torchtitan/config/job_config.py (238fa99) line 738: recipe_name
  // "tensorwise", "rowwise" or "rowwise_with_gw_hp"; the 2025 converter
  // "float8" reads [float8], the 2026 "quantize.linear.float8" its own table.
  const std::string now = write_temp("gw.toml",
                                     "[model]\nconverters = [\"quantize.linear.float8\"]\n"
                                     "[quantize.linear.float8]\nrecipe_name = \"rowwise_with_gw_hp\"\n");
  const std::string old = write_temp("gw_2025.toml",
                                     "[model]\nconverters = [\"float8\"]\n"
                                     "[float8]\nrecipe_name = \"rowwise_with_gw_hp\"\n");
  for (const std::string& f : {now, old}) {
    const auto r = test::run_cli("predict --model gpt3_350m --dp 8 --print-plan --from-torchtitan " + f);
    REQUIRE_MESSAGE(r.status == 0, r.err);
    CHECK(r.out.find("fp8_recipe           rowwise_with_gw_hp") != std::string::npos);
    CHECK(r.out.find("precision            fp8") != std::string::npos);
  }
  // The plan field reads it too; Transformer Engine frameworks do not offer it.
  const auto flag = test::run_cli("predict --model gpt3_350m --framework torchtitan --precision fp8 "
                                  "--fp8-recipe rowwise_with_gw_hp --print-plan");
  REQUIRE_MESSAGE(flag.status == 0, flag.err);
  CHECK(flag.out.find("Plan: torchtitan, fp8 rowwise_with_gw_hp,") != std::string::npos);
  CHECK_FALSE(spec::offers_fp8_recipe(spec::framework(*spec::find_framework("megatron")), spec::Fp8Recipe::kRowwiseGwHp));
  CHECK(spec::offers_fp8_recipe(spec::framework(*spec::find_framework("torchtitan")), spec::Fp8Recipe::kRowwiseGwHp));
}

TEST_CASE("fp8: rowwise_with_gw_hp runs the weight-gradient GEMM in bf16 and casts nothing for it") {
  // torchao/float8/config.py (pytorch/ao v0.16.0) lines 353-378:
  //   output      X, W per row, E4M3            (as rowwise)
  //   grad_input  dY per row E4M3, W TENSORWISE (one fp32 scale)
  //   grad_weight X, dY ScalingType.DISABLED: the 16-bit tensors, a bf16 GEMM.
  // GPT-3 Medium per layer (the header's counts, W 12,582,912 elements):
  //   forward as rowwise: 136,454,144 bytes in 16 kernels;
  //   backward dY row-wise: 5 x 18,874,368 + 2 x 4 x 8,192 (T = 2,048 fp32
  //            scales per linear, amax and cast) = 94,437,376;
  //            W per tensor: 5 x 12,582,912 + 4 x 2 x 4 = 62,914,592;
  //            157,351,968 bytes in 16 kernels (no wgrad casts).
  spec::PlanSpec p = fp8_plan(spec::Fp8Recipe::kRowwiseGwHp);
  p.framework = *spec::find_framework("torchtitan");
  const graph::Graph g = step_graph(p);
  Casts f = layer_casts(g, spec::Phase::kForward, "fp8_");
  CHECK(f.kernels == 16);
  CHECK(f.bytes == doctest::Approx(136'454'144).epsilon(1e-12));
  Casts b = layer_casts(g, spec::Phase::kBackward, "fp8_");
  CHECK(b.kernels == 16);
  CHECK(b.bytes == doctest::Approx(157'351'968).epsilon(1e-12));
  for (const auto& k : g.kernels) {
    const bool wgrad_cast = k.name.find("colwise") != std::string::npos && k.name.find("weight") == std::string::npos;
    CHECK_FALSE(wgrad_cast);
    CHECK(k.name != "fp8_weight_cast_transpose");
  }
  // The down projection (K = 4096, N = 1024, T = 2048): fprop and dgrad in
  // E4M3, wgrad dW = dY^T X in bf16, 2 x 2048 x 1024 x 4096 =
  // 17,179,869,184 FLOPs, reading the 16-bit dY and X: 2 x 2048 x (1024 +
  // 4096) = 20,971,520 bytes.
  const auto hw = test::gpu("h100_sxm");
  const cost::CostParams c = cost::resolve(hw);
  spec::PlanSpec bf16 = p, row = p;
  bf16.precision = spec::Precision::kBf16;
  row.fp8_recipe = spec::Fp8Recipe::kRowwise;
  const graph::Graph gb = step_graph(bf16), gr = step_graph(row);
  const auto find = [](const graph::Graph& x, std::string_view name) {
    for (const auto& k : x.kernels)
      if (k.name == name) return k;
    FAIL("no " << name);
    return graph::Kernel{};
  };
  CHECK(find(g, "mlp_down_proj").dtype == spec::Dtype::kFp8E4M3);
  CHECK(find(g, "mlp_down_proj.dgrad").dtype == spec::Dtype::kFp8E4M3);
  const graph::Kernel w = find(g, "mlp_down_proj.wgrad");
  CHECK(w.dtype == spec::Dtype::kBf16);
  CHECK_FALSE(w.has(graph::kFp8Gemm));
  CHECK(w.flops == doctest::Approx(17'179'869'184.0));
  CHECK(w.read_bytes == doctest::Approx(20'971'520.0));
  // At the bf16 rate: its time that of the bf16 plan's wgrad (the same
  // operands); rowwise's fp8 one runs at twice the peak (H100: 989 vs 1979
  // dense TFLOPS) at main-loop efficiency 0.82 against 0.895
  // (docs/accuracy_basis.md), 1979 x 0.82 / (989 x 0.895) = 1.83 times the
  // rate, less the launch and fill time both pay.
  const double t = cost::cost_kernel(w, c, false).time_s;
  CHECK(t == doctest::Approx(cost::cost_kernel(find(gb, "mlp_down_proj.wgrad"), c, false).time_s).epsilon(0.02));
  CHECK(t > 1.3 * cost::cost_kernel(find(gr, "mlp_down_proj.wgrad"), c, false).time_s);
}

TEST_CASE("fp8: torchtitan's tensorwise (torchao) saves the 16-bit input; Megatron's (Transformer Engine) the fp8 copy") {
  // torchao/float8/float8_linear.py (pytorch/ao v0.16.0, unchanged to
  // 36027d8) line 45: matmul_with_hp_or_float8_args.forward runs
  // ctx.save_for_backward(input_hp, weight_hp_t) under every recipe, so the
  // linear's 16-bit input is what it saves. Llama-3-8B (models/llama3_8b.yaml:
  // h = 4096, 32 heads of 128, 8 KV heads, FFN f = 14336, SwiGLU), TP 1, per
  // token per layer, 2-byte elements:
  //   QKV input   h = 4096 x 2 =  8,192
  //   out input   h = 4096 x 2 =  8,192  (O, a h-wide concat of the heads)
  //   up input    h = 4096 x 2 =  8,192  (gate and up share it)
  //   down input  f = 14336 x 2 = 28,672
  //   total                      53,248 bytes, as under bf16.
  // Transformer Engine (linear.py:614-616) keeps X's 1-byte column-wise copy:
  //   4096 + 4096 + 4096 + 14336 = 26,624 bytes, and the fused attention
  //   kernel keeps the 16-bit O for its own backward: + 4096 x 2 = 8,192.
  const auto m = test::model("llama3_8b");
  const auto hw = test::gpu("h100_sxm");
  const double T = 2048;
  const auto graph_of = [&](const spec::PlanSpec& p) {
    graph::Graph g;
    techniques::build_step(g, m, p, hw);
    return g;
  };
  struct Saved {
    double linears = 0, flash = 0, layer = 0;
  };
  const auto saved = [&](const graph::Graph& g) {  // per token per layer
    Saved s;
    for (const auto& k : g.kernels) {
      if (k.phase != spec::Phase::kForward || !k.has(graph::kLayer)) continue;
      const double b = (k.saved_bytes + k.saved_core_bytes) * k.count / g.layers / T;
      s.layer += b;
      if (k.op == Op::kFlashAttn) s.flash += b;
      if (k.cls == spec::KernelClass::kGemm &&
          (k.op == Op::kQkv || k.op == Op::kOut || k.op == Op::kUp || k.op == Op::kDown))
        s.linears += b;
    }
    return s;
  };
  spec::PlanSpec titan = fp8_plan(spec::Fp8Recipe::kTensorwise);
  titan.framework = *spec::find_framework("torchtitan");
  spec::PlanSpec titan_bf16 = titan;
  titan_bf16.precision = spec::Precision::kBf16;
  const Saved tt = saved(graph_of(titan)), tb = saved(graph_of(titan_bf16));
  CHECK(tt.linears == doctest::Approx(53'248).epsilon(1e-12));
  CHECK(tt.flash == doctest::Approx(tb.flash).epsilon(1e-12));
  CHECK(tt.layer == doctest::Approx(tb.layer).epsilon(1e-12));
  // No fp8 weight copy and no scaling state kept: weights and buffers as bf16.
  const auto mem = [&](const spec::PlanSpec& p) { return memory::estimate(graph_of(p), m, p, hw, 1); };
  const auto mt = mem(titan), mtb = mem(titan_bf16);
  CHECK(mt.weights == doctest::Approx(mtb.weights).epsilon(1e-12));
  CHECK(mt.activations == doctest::Approx(mtb.activations).epsilon(1e-12));
  CHECK(mt.buffers == doctest::Approx(mtb.buffers).epsilon(1e-12));

  // Megatron (framework 0) keeps Transformer Engine's: 26,624 in the linears,
  // 8,192 more in the attention kernel than under bf16.
  const spec::PlanSpec mega = fp8_plan(spec::Fp8Recipe::kTensorwise);
  spec::PlanSpec mega_bf16 = mega;
  mega_bf16.precision = spec::Precision::kBf16;
  const Saved ms = saved(graph_of(mega)), mb = saved(graph_of(mega_bf16));
  CHECK(ms.linears == doctest::Approx(26'624).epsilon(1e-12));
  CHECK(ms.flash - mb.flash == doctest::Approx(8'192).epsilon(1e-12));
  // Its weights: two 1-byte copies per linear weight on Hopper, 32 layers of
  // QKV 4096 x 6144, out 4096 x 4096, up 4096 x 28672, down 14336 x 4096 =
  // 218,103,808 parameters per layer: 2 x 32 x 218,103,808 = 13,958,643,712
  // bytes; buffers: amax, scale and scale_inv of 3 tensors x 128 linears,
  // 3 x 12 x 128 = 4,608 bytes.
  const auto mm = mem(mega), mmb = mem(mega_bf16);
  CHECK(mm.weights - mmb.weights == doctest::Approx(13'958'643'712.0));
  CHECK(mm.buffers - mmb.buffers == doctest::Approx(4'608));
}

TEST_CASE("fp8: torchtitan's tensorwise casts every operand where its GEMM needs it, one fp32 scale each") {
  // The six hp_tensor_to_float8_dynamic calls of float8_linear.py (lines
  // 53-88, 108-195) under Float8LinearConfig() (config.py lines 331-332),
  // each an amax pass (read 2 bytes per element, write one fp32) and a cast
  // (read 2, write 1 per element and the fp32). GPT-3 Medium per layer (the
  // header's counts; W 12,582,912 elements):
  //   forward  X: 5 x 14,680,064 + 4 x 8 = 73,400,352
  //            W: 5 x 12,582,912 + 4 x 8 = 62,914,592
  //            136,314,944 bytes in 16 kernels;
  //   backward dY twice, W and X once: 2 x 5 x 18,874,368 + 5 x 12,582,912
  //            + 5 x 14,680,064 + 4 x 4 x 8 = 325,058,688 bytes in 32 kernels,
  //            dY's in E5M2 (config.py line 300).
  spec::PlanSpec p = fp8_plan(spec::Fp8Recipe::kTensorwise);
  p.framework = *spec::find_framework("torchtitan");
  const graph::Graph g = step_graph(p);
  Casts f = layer_casts(g, spec::Phase::kForward, "fp8_");
  CHECK(f.kernels == 16);
  CHECK(f.bytes == doctest::Approx(136'314'944).epsilon(1e-12));
  Casts b = layer_casts(g, spec::Phase::kBackward, "fp8_");
  CHECK(b.kernels == 32);
  CHECK(b.bytes == doctest::Approx(325'058'688).epsilon(1e-12));
  for (const auto& k : g.kernels) {
    if (k.op == Op::kCast && k.has(graph::kLayer))
      CHECK(k.dtype == (k.name.find("grad") != std::string::npos ? spec::Dtype::kFp8E5M2 : spec::Dtype::kFp8E4M3));
    CHECK(k.name != "fp8_weight_cast_transpose");
  }
  p.fp8_primary_weights = true;
  const auto pred = engine::evaluate(test::model("gpt3_350m"), p, test::gpu("h100_sxm"));
  CHECK(pred.status == engine::Status::kInvalid);
  CHECK(pred.problem.field == "fp8.primary_weights");
}

TEST_CASE("fp8: the scaling state is counted in the buffers") {
  // Delayed: 3 tensors per linear, each a 1024-entry fp32 amax history plus
  // scale and scale_inv: 3 x 1026 x 4 = 12,312 bytes; 24 layers x 4 linears:
  // 96 x 12,312 = 1,181,952 bytes over bf16's buffers (the LM head's logits
  // buffers are bf16 in both).
  const auto m = test::model("gpt3_350m");
  const auto hw = test::gpu("h100_sxm");
  spec::PlanSpec bf16 = fp8_plan(spec::Fp8Recipe::kDelayed);
  bf16.precision = spec::Precision::kBf16;
  const auto mem = [&](const spec::PlanSpec& p) { return memory::estimate(step_graph(p), m, p, hw, 1); };
  CHECK(mem(fp8_plan(spec::Fp8Recipe::kDelayed)).buffers - mem(bf16).buffers == doctest::Approx(1'181'952));
  // Blockwise: scales travel with their tensors; the weight copies (row-wise
  // and transposed) carry an fp32 scale per 128 x 128 block: 2 x (1 + 4/16384)
  // bytes per linear parameter, against delayed's 2.
  const double linear_params = 24.0 * (3 + 1 + 4 + 4) * 1024 * 1024;
  CHECK(mem(fp8_plan(spec::Fp8Recipe::kBlockwise)).weights - mem(fp8_plan(spec::Fp8Recipe::kDelayed)).weights ==
        doctest::Approx(linear_params * 2 * 4.0 / 16384));
}

TEST_CASE("fp8: mxfp8 and nvfp4 need Blackwell") {
  const auto m = test::model("llama3_8b");
  const auto h100 = test::gpu("h100_sxm");
  spec::PlanSpec p;
  p.precision = spec::Precision::kFp8;
  p.fp8_recipe = spec::Fp8Recipe::kMxfp8;
  engine::Problem e = engine::check_plan(m, p, h100);
  CHECK(e.field == "fp8.recipe");
  CHECK(e.message == "mxfp8 needs Blackwell block-scaled tensor cores; NVIDIA H100 SXM5 80GB is hopper");
  CHECK(engine::check_plan(m, p, test::gpu("b200")).field.empty());
  p.fp8_recipe = spec::Fp8Recipe::kBlockwise;
  CHECK(engine::check_plan(m, p, h100).field.empty());
  p.precision = spec::Precision::kNvfp4;
  e = engine::check_plan(m, p, h100);
  CHECK(e.field == "precision");
  CHECK(e.message == "nvfp4 needs Blackwell block-scaled tensor cores; NVIDIA H100 SXM5 80GB is hopper");
  const auto r = test::run_cli("predict --gpu h100_sxm --model llama3_8b --precision fp8 --fp8-recipe mxfp8");
  CHECK(r.status == 2);
  CHECK(r.err == "error: fp8.recipe (--fp8-recipe): mxfp8 needs Blackwell block-scaled tensor cores; NVIDIA H100 "
                 "SXM5 80GB is hopper\n");
}

TEST_CASE("nvfp4: linear GEMMs in fp4, the LM head in bf16, Hadamard-transformed column-wise copies") {
  spec::PlanSpec p = fp8_plan(spec::Fp8Recipe::kDelayed);
  p.precision = spec::Precision::kNvfp4;
  const graph::Graph g = step_graph(p);
  for (const auto& k : g.kernels) {
    if (k.cls != spec::KernelClass::kGemm) continue;
    if (k.op == Op::kLmHead) CHECK(k.dtype == spec::Dtype::kBf16);
    if (k.op == Op::kQkv || k.op == Op::kDown) CHECK(k.dtype == spec::Dtype::kFp4);
  }
  // Forward, four inputs: amax (read 2, write 4 bytes), row-wise and
  // column-wise quantization (each read 2, write 9/16 bytes per element):
  // 14,680,064 x (2 + 2 x 2.5625) + 16 = 104,595,472 bytes in 12 kernels; the
  // column-wise ones add a 16x16 Hadamard transform, 32 FLOP per element.
  const Casts f = layer_casts(g, spec::Phase::kForward, "nvfp4_");
  CHECK(f.kernels == 12);
  CHECK(f.bytes == doctest::Approx(104'595'472));
  for (const auto& k : g.kernels)
    if (k.name == "nvfp4_rht_quantize_input_colwise" && k.phase == spec::Phase::kForward)
      CHECK(k.flops == doctest::Approx(34 * k.read_bytes / 2));
}

TEST_CASE("power limit: a plan field in watts, greater than zero, shown only when set") {
  const auto ok = write_temp("power.yaml", "power_limit: 500 W\n");
  const spec::PlanSpec p = spec::load_plan(ok);
  CHECK(p.power_limit_w == 500);
  CHECK(spec::plan_summary(p) ==
        "megatron, bf16, flash2 attention, fusion fused, recompute none, adamw, 500 W power limit, TP1 PP1 DP1");
  CHECK(spec::plan_summary(spec::PlanSpec{}).find("power") == std::string::npos);
  const auto zero = write_temp("power0.yaml", "power_limit: 0 W\n");
  CHECK(plan_errors(zero) ==
        std::vector<std::string>{zero + ":1:14: error: power_limit: expected a power greater than zero, got \"0 W\""});
  const auto neg = write_temp("power_neg.yaml", "precision: bf16\npower_limit: -300 W\n");
  CHECK(plan_errors(neg) == std::vector<std::string>{
                                neg + ":2:14: error: power_limit: expected a power greater than zero, got \"-300 W\""});
  const auto bare = write_temp("power_bare.yaml", "power_limit: 500\n");
  CHECK(plan_errors(bare) ==
        std::vector<std::string>{bare + ":1:14: error: power_limit: expected a power such as \"700 W\", got \"500\""});
  spec::PlanSpec q;
  CHECK(spec::apply_setting(q, "power_limit", "450 W").empty());
  CHECK(q.power_limit_w == 450);
}

TEST_CASE("fp8 activation storage (DeepSeek-V3): SwiGLU's input in fp8, the attention output once in E5M6") {
  // Llama-3-8B (h 4096, FFN f 14336 gated, 32 heads of 128), micro-batch 1,
  // sequence 2048: T = 2048 tokens, TP 1, fp8 blockwise (1 + 4/128 bytes an
  // element with its 1x128 scales), fused kernels. Per layer, by hand:
  //  - the fused SwiGLU saves its input, gate and up: T x 2f = 58,720,256
  //    elements, 117,440,512 bytes in bf16; stored in fp8: 60,555,264;
  //  - the attention output O (T x 32 x 128 = 8,388,608 elements): without
  //    the storage the fused attention keeps it in 16 bits (16,777,216 B)
  //    and the output projection its fp8 column-wise copy (8,650,752 B);
  //    with it, one E5M6 copy of 12 bits (12,582,912 B) serves both.
  const auto m = test::model("llama3_8b");
  const auto hw = test::gpu("h100_sxm");
  spec::PlanSpec p = fp8_plan(spec::Fp8Recipe::kBlockwise);
  auto forward_saved = [&](const spec::PlanSpec& q, Op op, std::string_view name) {
    graph::Graph g;
    techniques::build_microbatch(g, m, q, hw);
    for (const auto& k : g.kernels)
      if (k.phase == spec::Phase::kForward && k.op == op && (name.empty() || k.name == name)) return k.saved_bytes;
    return -1.0;
  };
  spec::PlanSpec s = p;
  s.fp8_activation_storage = true;
  CHECK(forward_saved(p, Op::kFused, "fused_swiglu") == doctest::Approx(117'440'512.0));
  CHECK(forward_saved(s, Op::kFused, "fused_swiglu") == doctest::Approx(60'555'264.0));
  CHECK(forward_saved(p, Op::kOut, "") == doctest::Approx(8'650'752.0));
  CHECK(forward_saved(s, Op::kOut, "") == 0);
  CHECK(forward_saved(p, Op::kFlashAttn, "") - forward_saved(s, Op::kFlashAttn, "") ==
        doctest::Approx(16'777'216.0 - 12'582'912.0));
  // The memory model's saved bytes per layer fall by the sum: 69,730,304.
  auto layer_saved = [&](const spec::PlanSpec& q) {
    graph::Graph g;
    techniques::build_microbatch(g, m, q, hw);
    return memory::facts(g).layer_saved;
  };
  CHECK(layer_saved(p) - layer_saved(s) == doctest::Approx(69'730'304.0));
  // Time is unchanged: the quantization rides in the kernels that write them.
  const auto a = engine::evaluate(m, p, hw), b = engine::evaluate(m, s, hw);
  CHECK(a.step.time_s == doctest::Approx(b.step.time_s).epsilon(1e-12));
  // DeepSeek's storage rides on its blockwise quantization: other recipes and
  // 16-bit plans are refused.
  spec::PlanSpec d = fp8_plan(spec::Fp8Recipe::kDelayed);
  d.fp8_activation_storage = true;
  CHECK(engine::evaluate(m, d, hw).problem.field == "fp8.activation_storage");
  d.precision = spec::Precision::kBf16;
  CHECK(engine::evaluate(m, d, hw).problem.field == "fp8.activation_storage");
}
