// Muon (Jordan et al. 2024, github.com/KellerJordan/Muon; Liu et al. 2025,
// Moonlight, arXiv:2502.16982): one momentum buffer per hidden 2-D matrix,
// AdamW's two moments for the rest, five Newton-Schulz iterations per matrix
// as GEMMs in the optimizer step, and under ZeRO the all-gather of each
// sharded matrix over the data-parallel group (Moonlight's distributed Muon,
// Sec. 2.3, Algorithm 1). Every expected number is worked out by hand below.
#include <doctest/doctest.h>

#include "ridgeline/memory/memory.hpp"
#include "ridgeline/techniques/params.hpp"
#include "ridgeline/techniques/passes.hpp"
#include "test_support.hpp"

using namespace ridgeline;

namespace {

spec::PlanSpec muon_plan() {
  auto p = test::plan(1, 4096);
  p.optimizer.kind = spec::OptimizerKind::kMuon;
  return p;
}

/// The step's kernels named `name`: sum of flops x count, and how many.
struct Named {
  double flops = 0, kernels = 0;
};
Named named(const graph::Graph& g, std::string_view name) {
  Named n;
  for (const auto& k : g.kernels)
    if (k.name == name) n.flops += k.flops * k.count, n.kernels += 1;
  return n;
}

const graph::Kernel* find(const graph::Graph& g, std::string_view name) {
  for (const auto& k : g.kernels)
    if (k.name == name) return &k;
  return nullptr;
}

}  // namespace

// One 11008 x 4096 matrix (rows > cols: the reference transposes it, so
// m = 4096 <= n = 11008). Per iteration:
//   X Xᵀ   2 m² n = 2 x 4096² x 11008 = 369,367,187,456
//   A A    2 m³   = 2 x 4096³         = 137,438,953,472
//   B X    2 m² n                     = 369,367,187,456
//   sum 876,173,328,384; five iterations 4,380,866,641,920 FLOP.
TEST_CASE("muon: the Newton-Schulz FLOPs of one matrix") {
  techniques::LocalParams lp;
  lp.weights = lp.trainable = lp.matrix_elems = lp.hidden_matrix_elems = 11008.0 * 4096;
  lp.matrices[0] = {11008, 4096, 1};
  lp.matrix_groups = 1;
  graph::Graph g;
  techniques::apply_optimizer(g, muon_plan(), lp);
  std::vector<const graph::Kernel*> ns;
  for (const auto& k : g.kernels)
    if (k.name == "muon_newton_schulz") ns.push_back(&k);
  REQUIRE(ns.size() == 3);
  CHECK(ns[0]->flops == 369367187456.0);
  CHECK(ns[1]->flops == 137438953472.0);
  CHECK(ns[2]->flops == 369367187456.0);
  for (const auto* k : ns) {
    CHECK(k->count == 5);
    CHECK(k->cls == spec::KernelClass::kGemm);
    CHECK(k->dtype == spec::Dtype::kBf16);  // the reference orthogonalises in bf16
    CHECK(k->model_flops == 0);             // optimizer work, no MFU credit
    CHECK(k->has(graph::kPerStep));
  }
  CHECK(named(g, "muon_newton_schulz").flops == 4380866641920.0);
  // No data parallelism: no gather.
  CHECK(find(g, "muon_dp_gather") == nullptr);
}

// Llama-3-8B (h 4096, 32 heads of 128, 8 KV heads, SwiGLU 14336, 32 layers,
// vocab 128256, untied). Hidden matrices per layer:
//   QKV   4096 x 6144  =  25,165,824    O     4096 x 4096  =  16,777,216
//   gate+up 4096 x 28672 = 117,440,512  down 14336 x 4096  =  58,720,256
//   = 218,103,808 a layer, 6,979,321,856 over 32 layers.
// The rest (AdamW): embedding and head 2 x 128256 x 4096 = 1,050,673,152,
// norms 32 x 2 x 4096 + 4096 = 266,240: 1,050,939,392 (total 8,030,261,248).
constexpr double kLlama8bHidden = 6979321856.0;
constexpr double kLlama8bRest = 1050939392.0;

TEST_CASE("muon: Llama-3-8B's hidden matrices and optimizer state bytes") {
  const auto m = test::model("llama3_8b");
  auto p = muon_plan();
  const auto lp = techniques::local_params(m, p);
  CHECK(lp.hidden_matrix_elems == kLlama8bHidden);
  CHECK(lp.trainable == kLlama8bHidden + kLlama8bRest);
  CHECK(lp.matrix_groups == 4);
  // State: 4 B of fp32 momentum per hidden element, 8 B (m and v) for the rest:
  // 6,979,321,856 x 4 + 1,050,939,392 x 8 = 27,917,287,424 + 8,407,515,136 = 36,324,802,560.
  const auto ms = memory::model_state(m, p);
  CHECK(ms.optimizer == doctest::Approx(36324802560.0).epsilon(1e-12));
  // AdamW's: 8,030,261,248 x 8 = 64,242,089,984.
  auto adam = p;
  adam.optimizer.kind = spec::OptimizerKind::kAdamW;
  CHECK(memory::model_state(m, adam).optimizer == doctest::Approx(64242089984.0).epsilon(1e-12));
  // ZeRO-1 over DP 8 shards the momentum as it shards Adam's moments.
  p.parallel.dp = 8;
  p.parallel.zero = 1;
  p.global_batch = 8;
  CHECK(memory::model_state(m, p).optimizer == doctest::Approx(36324802560.0 / 8).epsilon(1e-12));
}

// Per layer, 5 (4 m² n + 2 m³) with m the shorter side:
//   QKV  m 4096, n 6144:   5 x 549,755,813,888   =  2,748,779,069,440
//   O    m n 4096:         5 x 412,316,860,416   =  2,061,584,302,080
//   gate+up m 4096, n 28672: 5 x 2,061,584,302,080 = 10,307,921,510,400
//   down m 4096, n 14336:  5 x 1,099,511,627,776 =  5,497,558,138,880
//   = 20,615,843,020,800 a layer, 659,706,976,665,600 over 32 layers.
TEST_CASE("muon: Llama-3-8B's Newton-Schulz FLOPs per step and the ZeRO gather") {
  const auto m = test::model("llama3_8b");
  auto p = muon_plan();
  const auto g = test::step(m, p);
  CHECK(named(g, "muon_newton_schulz").flops == 659706976665600.0);
  CHECK(named(g, "muon_newton_schulz").kernels == 12);  // 4 shapes x 3 products
  CHECK(find(g, "muon_dp_gather") == nullptr);

  // Plain data parallelism (ZeRO 0): every rank has the whole gradient and
  // momentum after the all-reduce, so nothing is gathered.
  p.parallel.dp = 8;
  p.global_batch = 8;
  CHECK(find(test::step(m, p), "muon_dp_gather") == nullptr);

  // ZeRO-1 over DP 8: the momentum-updated hidden matrices all-gathered in
  // fp32, S = 6,979,321,856 x 4 = 27,917,287,424 bytes over 8 ranks, once a
  // step; every rank still orthogonalises every matrix (the same FLOPs).
  p.parallel.zero = 1;
  const auto z = test::step(m, p);
  const auto* k = find(z, "muon_dp_gather");
  REQUIRE(k != nullptr);
  CHECK(k->comm.kind == graph::Collective::kAllGather);
  CHECK(k->comm.bytes == kLlama8bHidden * 4);
  CHECK(k->comm.group == 8);
  CHECK(k->count == 1);
  CHECK(k->has(graph::kPerStep));
  CHECK_FALSE(k->has(graph::kOverlapped));
  CHECK(named(z, "muon_newton_schulz").flops == 659706976665600.0);

  // TP 2 halves every split matrix: QKV 4096 x 3072, O 2048 x 4096, gate+up
  // 4096 x 14336, down 7168 x 4096 (m = 3072, 2048, 4096, 4096):
  //   5 (4 x 3072² x 4096 + 2 x 3072³) = 1,063,004,405,760
  //   5 (4 x 2048² x 4096 + 2 x 2048³) =   429,496,729,600
  //   5 (4 x 4096² x 14336 + 2 x 4096³) = 5,497,558,138,880
  //   5 (4 x 4096² x 7168 + 2 x 4096³)  = 3,092,376,453,120
  //   = 10,082,435,727,360 a layer, 322,637,943,275,520 over 32.
  auto tp = muon_plan();
  tp.parallel.tp = 2;
  CHECK(named(test::step(m, tp), "muon_newton_schulz").flops == 322637943275520.0);
}

// Mixtral-8x7B at EP 8 over DP 16, ZeRO-1: experts reduce and shard over
// 16 / 8 = 2 ranks, the rest over 16. Per layer on one GPU: its one expert
// (8 / 8) 3 x 4096 x 14336 = 176,160,768; attention 41,943,040 and the router
// 4096 x 8 = 32,768. Over 32 layers: experts 5,637,144,576, the rest
// 1,343,225,856, gathered in fp32: 22,548,578,304 and 5,372,903,424 bytes.
TEST_CASE("muon: expert matrices gather over the expert data-parallel group") {
  const auto m = test::model("mixtral_8x7b");
  auto p = muon_plan();
  p.parallel.dp = 16;
  p.parallel.ep = 8;
  p.parallel.zero = 1;
  p.global_batch = 16;
  const auto lp = techniques::local_params(m, p);
  CHECK(lp.expert_hidden_matrix_elems == 5637144576.0);
  CHECK(lp.hidden_matrix_elems == 5637144576.0 + 1343225856.0);
  const auto g = test::step(m, p);
  const auto* dense = find(g, "muon_dp_gather");
  const auto* expert = find(g, "muon_dp_expert_gather");
  REQUIRE(dense != nullptr);
  REQUIRE(expert != nullptr);
  CHECK(dense->comm.bytes == 1343225856.0 * 4);
  CHECK(dense->comm.group == 16);
  CHECK(expert->comm.bytes == 5637144576.0 * 4);
  CHECK(expert->comm.group == 2);
  // State: the experts' momentum (4 B, no biases) over 2 ranks; the rest
  // (attention and router 4 B; embedding, head and norms 8 B) over 16.
  // Embedding and head 2 x 32000 x 4096 = 262,144,000; norms 32 x 2 x 4096 +
  // 4096 = 266,240: (1,343,225,856 x 4 + 262,410,240 x 8) / 16 = 467,011,584;
  // 5,637,144,576 x 4 / 2 = 11,274,289,152; sum 11,741,300,736.
  CHECK(memory::model_state(m, p).optimizer == doctest::Approx(11741300736.0).epsilon(1e-12));
}

TEST_CASE("muon: the step costs the orthogonalisation, and the plan reads 'muon'") {
  const auto m = test::model("llama3_8b");
  const auto gpu = test::gpu("h100_sxm");
  auto p = muon_plan();
  auto adam = p;
  adam.optimizer.kind = spec::OptimizerKind::kAdamW;
  const auto pm = engine::evaluate(m, p, gpu);
  const auto pa = engine::evaluate(m, adam, gpu);
  // (It does not fit one H100, 80 GB; the step is costed all the same.)
  REQUIRE(pm.status != engine::Status::kInvalid);
  // 6.6e14 FLOP of bf16 GEMMs take at least 6.6e14 / 989e12 = 0.67 s on an
  // H100 (989 TFLOP/s dense bf16): the optimizer step grows by at least that.
  CHECK(pm.step.optimizer_s - pa.step.optimizer_s > 659706976665600.0 / 989e12);
  CHECK(pm.step.model_flops == pa.step.model_flops);
  CHECK(pm.memory.first_stage.optimizer < pa.memory.first_stage.optimizer);
  auto parsed = spec::parse_optimizer("muon");
  REQUIRE(parsed.has_value());
  CHECK(*parsed == spec::OptimizerKind::kMuon);
  CHECK(spec::to_string(spec::OptimizerKind::kMuon) == "muon");
}
