#include "ridgeline/search/search.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <compare>
#include <condition_variable>
#include <fmt/format.h>
#include <functional>
#include <iterator>
#include <limits>
#include <mutex>
#include <thread>
#include <tuple>

#include "ridgeline/engine/cost_memo.hpp"
#include "ridgeline/memory/memory.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/plan_fields.hpp"
#include "ridgeline/techniques/passes.hpp"

namespace ridgeline::search {

namespace {

std::vector<int> values_or(int fixed, std::vector<int> all) {
  if (fixed > 0 || (fixed == 0 && !all.empty() && all.front() == 0)) return {fixed};
  return all;
}

/// A value of the recompute dimension: a policy, or full recomputation of
/// `quarters` quarters of each stage's layers (block:K, K set per PP degree
/// by block_layers_at).
struct RecomputeChoice {
  spec::Recompute policy;
  int quarters = 0;      // 0: the policy as it is
  size_t first_block = 0;  // the index of this policy's first block variant (quarters > 0)
};

/// block:K of `quarters` quarters of a stage's layers at PP `pp`: K = L x
/// quarters / 4 with L = layers / PP, in integers (32 layers at PP 4: 8 a
/// stage, K = 2, 4, 6).
int block_layers_at(int layers, int pp, int quarters) { return layers / pp * quarters / 4; }

}  // namespace

/// Each axis's values for one search (Axis::values fills its own).
struct AxisValues {
  int layers = 0;  // the model's decoder layers
  std::vector<int> tp, pp, cp, ep, micro, vpp, zero;
  std::vector<RecomputeChoice> rec;
  std::vector<spec::Precision> prec;
  std::vector<std::uint8_t> fw;
  std::vector<bool> ovl;
  std::vector<spec::Fp8Recipe> recipe;
  std::vector<spec::OffloadSpec> offload;
  std::vector<int> sp;  // -1: on with TP > 1; 0 off; 1 on
  std::vector<spec::MoeDispatcher> dispatcher;
  /// Stage splits; `stages_searched` false: the base plan's first and last
  /// stage layers, as given (one entry). run() forms each split's layers
  /// per PP degree.
  std::vector<StageTrim> stages;
  bool stages_searched = false;
};

namespace {

template <class T>
std::string text_of(const T& v) {
  return spec::to_string(v);
}

bool is_moe(const spec::ModelSpec& m) { return m.is_moe(); }

// GCC 12 warns of members a designated initializer leaves to their
// defaults, which is what the designators are for here.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
/// The axis table, in enumeration order: the first digit varies slowest,
/// and the first refused plan in this order is the one a search reports.
/// Grouped by scope, the graph's digits form a unit of work, the stage
/// split's the graphs within it, the step's the layouts that share a graph.
constinit const Axis kAxes[] = {
    {.dim = Dim::kTp, .name = "tp", .key = "parallel.tp", .by_default = true,
     .pin = [](SearchSpec& s, const spec::PlanSpec& b) { return std::to_string(s.tp = b.parallel.tp); },
     .values = [](AxisValues& v, const SearchSpec& s, const spec::ModelSpec&, const spec::PlanSpec&) {
       v.tp = values_or(s.tp, {1, 2, 4, 8, 16, 32});
     },
     .count = [](const AxisValues& v) { return v.tp.size(); },
     .apply = [](Layout& l, const AxisValues& v, size_t i) { l.tp = v.tp[i]; }},
    {.dim = Dim::kPp, .name = "pp", .key = "parallel.pp", .by_default = true,
     .pin = [](SearchSpec& s, const spec::PlanSpec& b) { return std::to_string(s.pp = b.parallel.pp); },
     .values = [](AxisValues& v, const SearchSpec& s, const spec::ModelSpec& m, const spec::PlanSpec&) {
       std::vector<int> pps;  // every divisor of the layers up to the GPU count
       for (int p = 1; p <= m.layers && p <= s.gpus; ++p)
         if (m.layers % p == 0) pps.push_back(p);
       v.pp = values_or(s.pp, pps);
     },
     .count = [](const AxisValues& v) { return v.pp.size(); },
     .apply = [](Layout& l, const AxisValues& v, size_t i) { l.pp = v.pp[i]; }},
    // The split's layers at each PP degree are formed by run() (the least
    // trim that leaves the other stages an even share).
    {.dim = Dim::kStages, .name = "stages", .key = "parallel.first_stage_layers",
     .also_key = "parallel.last_stage_layers", .shown_pinned = false,
     .search = [](SearchSpec& s, const spec::ModelSpec&, const spec::HardwareSpec&, const spec::PlanSpec&) {
       s.stages = searchable_stage_trims();
     },
     .pin = [](SearchSpec&, const spec::PlanSpec& b) {  // run() reads the base plan's split when s.stages is empty
       Layout l;
       l.first_stage_layers = b.parallel.first_stage_layers;
       l.last_stage_layers = b.parallel.last_stage_layers;
       return stages_text(l);
     },
     .values = [](AxisValues& v, const SearchSpec& s, const spec::ModelSpec&, const spec::PlanSpec& b) {
       v.stages_searched = !s.stages.empty();
       v.stages = v.stages_searched
                      ? s.stages
                      : std::vector<StageTrim>{{b.parallel.first_stage_layers, b.parallel.last_stage_layers}};
     },
     .count = [](const AxisValues& v) { return v.stages.size(); }},
    {.dim = Dim::kDp, .name = "dp", .key = "parallel.dp", .follows = true,
     .pin = [](SearchSpec& s, const spec::PlanSpec& b) { return std::to_string(s.dp = b.parallel.dp); }},
    {.dim = Dim::kCp, .name = "cp", .key = "parallel.cp", .by_default = true,
     .pin = [](SearchSpec& s, const spec::PlanSpec& b) { return std::to_string(s.cp = b.parallel.cp); },
     .values = [](AxisValues& v, const SearchSpec& s, const spec::ModelSpec&, const spec::PlanSpec&) {
       v.cp = values_or(s.cp, {1, 2, 4, 8});
     },
     .count = [](const AxisValues& v) { return v.cp.size(); },
     .apply = [](Layout& l, const AxisValues& v, size_t i) { l.cp = v.cp[i]; }},
    {.dim = Dim::kEp, .name = "ep", .key = "parallel.ep", .by_default = true, .applies = is_moe,
     .pin = [](SearchSpec& s, const spec::PlanSpec& b) { return std::to_string(s.ep = b.parallel.ep); },
     .values = [](AxisValues& v, const SearchSpec& s, const spec::ModelSpec& m, const spec::PlanSpec&) {
       // Expert parallelism, for a mixture of experts: powers of two that divide
       // the experts, up to the GPU count (engine::check_plan: EP | experts, EP | DP x CP).
       std::vector<int> eps{1};
       if (m.is_moe())
         for (int e = 2; e <= m.moe.experts && e <= s.gpus; e *= 2)
           if (m.moe.experts % e == 0) eps.push_back(e);
       v.ep = values_or(s.ep, eps);
     },
     .count = [](const AxisValues& v) { return v.ep.size(); },
     .apply = [](Layout& l, const AxisValues& v, size_t i) { l.ep = v.ep[i]; }},
    {.dim = Dim::kMicroBatch, .name = "mb", .key = "micro_batch", .by_default = true,
     .pin = [](SearchSpec& s, const spec::PlanSpec& b) { return std::to_string(s.micro_batch = b.micro_batch); },
     .values = [](AxisValues& v, const SearchSpec& s, const spec::ModelSpec&, const spec::PlanSpec&) {
       v.micro = values_or(s.micro_batch, {1, 2, 4, 8, 16});
     },
     .count = [](const AxisValues& v) { return v.micro.size(); },
     .apply = [](Layout& l, const AxisValues& v, size_t i) { l.micro_batch = v.micro[i]; }},
    // Its values include block recomputation's (recompute_layers): each full
    // recomputation of every layer is followed by its block variants, whose
    // K run() sets per PP degree.
    {.dim = Dim::kRecompute, .name = "recompute", .key = "recompute", .by_default = true,
     .pin = [](SearchSpec& s, const spec::PlanSpec& b) {
       s.recompute = {b.recompute};
       return spec::to_string(b.recompute);
     },
     .values = [](AxisValues& v, const SearchSpec& s, const spec::ModelSpec&, const spec::PlanSpec&) {
       const std::vector<spec::Recompute> recs =
           s.recompute.empty() ? std::vector<spec::Recompute>{{spec::RecomputeKind::kNone, 0},
                                                              {spec::RecomputeKind::kSelective, 0},
                                                              {spec::RecomputeKind::kFull, 0}}
                               : s.recompute;
       for (const spec::Recompute& r : recs) {
         v.rec.push_back({r, 0, 0});
         const size_t first = v.rec.size();
         if (r.kind == spec::RecomputeKind::kFull && r.block_layers == 0)
           for (int q : s.block_quarters) v.rec.push_back({r, q, first});
       }
     },
     .count = [](const AxisValues& v) { return v.rec.size(); },
     .apply = [](Layout& l, const AxisValues& v, size_t i) { l.recompute = v.rec[i].policy; },
     // block:K of a share of the stage's L layers: K = 0 (block:0) and K = L
     // both recompute every layer, plain full recomputation again; a K an
     // earlier share gave at this PP repeats that layout.
     .redundant = [](const Layout& l, const AxisValues& v, size_t i) {
       const RecomputeChoice& rc = v.rec[i];
       if (rc.quarters == 0) return false;
       const int k = l.recompute.block_layers;  // set by run() for this PP
       bool same = k < 1 || k >= v.layers / l.pp;
       for (size_t e = rc.first_block; e < i && !same; ++e)
         same = block_layers_at(v.layers, l.pp, v.rec[e].quarters) == k;
       return same;
     }},
    {.dim = Dim::kRecomputeLayers, .name = "recompute_layers", .key = "recompute",
     .search = [](SearchSpec& s, const spec::ModelSpec&, const spec::HardwareSpec&, const spec::PlanSpec&) {
       s.block_quarters = searchable_block_quarters();
     }},
    {.dim = Dim::kPrecision, .name = "precision", .key = "precision",
     .search = [](SearchSpec& s, const spec::ModelSpec&, const spec::HardwareSpec& hw, const spec::PlanSpec& b) {
       s.precision = searchable_precisions(hw, b);
     },
     .pin = [](SearchSpec& s, const spec::PlanSpec& b) {
       s.precision = {b.precision};
       return text_of(b.precision);
     },
     .values = [](AxisValues& v, const SearchSpec& s, const spec::ModelSpec&, const spec::PlanSpec& b) {
       v.prec = s.precision.empty() ? std::vector<spec::Precision>{b.precision} : s.precision;
     },
     .count = [](const AxisValues& v) { return v.prec.size(); },
     .apply = [](Layout& l, const AxisValues& v, size_t i) { l.precision = v.prec[i]; }},
    {.dim = Dim::kFramework, .name = "framework", .key = "framework",
     .search = [](SearchSpec& s, const spec::ModelSpec&, const spec::HardwareSpec&, const spec::PlanSpec&) {
       for (size_t k = 0; k < spec::framework_count(); ++k) s.frameworks.push_back(static_cast<std::uint8_t>(k));
     },
     .pin = [](SearchSpec& s, const spec::PlanSpec& b) {
       s.frameworks = {b.framework};
       return spec::framework(b.framework).id;
     },
     .values = [](AxisValues& v, const SearchSpec& s, const spec::ModelSpec&, const spec::PlanSpec& b) {
       v.fw = s.frameworks.empty() ? std::vector<std::uint8_t>{b.framework} : s.frameworks;
     },
     .count = [](const AxisValues& v) { return v.fw.size(); },
     .apply = [](Layout& l, const AxisValues& v, size_t i) { l.framework = v.fw[i]; }},
    {.dim = Dim::kTpOverlap, .name = "tp_overlap", .key = "parallel.tp_comm_overlap", .shown_pinned = false,
     .search = [](SearchSpec& s, const spec::ModelSpec&, const spec::HardwareSpec&, const spec::PlanSpec&) {
       s.tp_overlap = {false, true};
     },
     .pin = [](SearchSpec& s, const spec::PlanSpec& b) {
       s.tp_overlap = {b.parallel.tp_comm_overlap};
       return std::string(b.parallel.tp_comm_overlap ? "on" : "off");
     },
     .values = [](AxisValues& v, const SearchSpec& s, const spec::ModelSpec&, const spec::PlanSpec& b) {
       v.ovl = s.tp_overlap.empty() ? std::vector<bool>{b.parallel.tp_comm_overlap} : s.tp_overlap;
     },
     .count = [](const AxisValues& v) { return v.ovl.size(); },
     .apply = [](Layout& l, const AxisValues& v, size_t i) { l.tp_overlap = v.ovl[i]; },
     // With TP 1 there is nothing to overlap: the same layout as off.
     .redundant = [](const Layout& l, const AxisValues& v, size_t) {
       return v.ovl.size() > 1 && l.tp_overlap && l.tp == 1;
     }},
    {.dim = Dim::kFp8Recipe, .name = "fp8_recipe", .key = "fp8.recipe", .shown_pinned = false,
     .search = [](SearchSpec& s, const spec::ModelSpec& m, const spec::HardwareSpec& hw, const spec::PlanSpec& b) {
       s.fp8_recipe = searchable_fp8_recipes(m, hw, b);
     },
     .pin = [](SearchSpec& s, const spec::PlanSpec& b) {
       s.fp8_recipe = {b.fp8_recipe};
       return text_of(b.fp8_recipe);
     },
     .values = [](AxisValues& v, const SearchSpec& s, const spec::ModelSpec&, const spec::PlanSpec& b) {
       v.recipe = s.fp8_recipe.empty() ? std::vector<spec::Fp8Recipe>{b.fp8_recipe} : s.fp8_recipe;
     },
     .count = [](const AxisValues& v) { return v.recipe.size(); },
     .apply = [](Layout& l, const AxisValues& v, size_t i) { l.fp8_recipe = v.recipe[i]; },
     // No fp8 GEMM: the recipe reads nothing, every recipe but the first is the same layout.
     .redundant = [](const Layout& l, const AxisValues&, size_t i) {
       return i > 0 && l.precision != spec::Precision::kFp8;
     }},
    // Sequence parallelism (Korthikanti et al. 2022): splits the norms' and
    // dropouts' activations over the TP ranks and turns each TP all-reduce
    // into a reduce-scatter and an all-gather (graph::build_forward).
    {.dim = Dim::kSp, .name = "sp", .key = "parallel.sp", .shown_pinned = false,
     .search = [](SearchSpec& s, const spec::ModelSpec&, const spec::HardwareSpec&, const spec::PlanSpec&) {
       s.sp_searched = true;
     },
     .pin = [](SearchSpec& s, const spec::PlanSpec& b) {
       s.sp = b.parallel.sp ? 1 : 0;
       return std::string(b.parallel.sp ? "on" : "off");
     },
     .values = [](AxisValues& v, const SearchSpec& s, const spec::ModelSpec&, const spec::PlanSpec&) {
       v.sp = s.sp_searched ? std::vector<int>{0, 1} : std::vector<int>{s.sp};
     },
     .count = [](const AxisValues& v) { return v.sp.size(); },
     .apply = [](Layout& l, const AxisValues& v, size_t i) { l.sp = v.sp[i] < 0 ? l.tp > 1 : v.sp[i] == 1; },
     // With TP 1 there is nothing to split: the same layout as off.
     .redundant = [](const Layout& l, const AxisValues& v, size_t) { return v.sp.size() > 1 && l.sp && l.tp == 1; }},
    // The MoE token dispatcher (spec::MoeDispatcher): one NCCL all-to-all
    // or DeepEP's node-aware kernels (DeepSeek-V3 report Sec. 3.2.2).
    {.dim = Dim::kDispatcher, .name = "dispatcher", .key = "moe.dispatcher", .shown_pinned = false,
     .applies = is_moe,
     .search = [](SearchSpec& s, const spec::ModelSpec&, const spec::HardwareSpec&, const spec::PlanSpec&) {
       s.dispatcher = {spec::MoeDispatcher::kAllToAll, spec::MoeDispatcher::kDeepEp};
     },
     .pin = [](SearchSpec& s, const spec::PlanSpec& b) {
       s.dispatcher = {b.moe.dispatcher};
       return spec::to_string(b.moe.dispatcher);
     },
     .values = [](AxisValues& v, const SearchSpec& s, const spec::ModelSpec&, const spec::PlanSpec& b) {
       v.dispatcher = s.dispatcher.empty() ? std::vector<spec::MoeDispatcher>{b.moe.dispatcher} : s.dispatcher;
     },
     .count = [](const AxisValues& v) { return v.dispatcher.size(); },
     .apply = [](Layout& l, const AxisValues& v, size_t i) { l.dispatcher = v.dispatcher[i]; },
     // Without EP no token leaves its GPU: the same layout as the first.
     .redundant = [](const Layout& l, const AxisValues&, size_t i) { return i > 0 && l.ep == 1; }},
    {.dim = Dim::kVpp, .name = "vpp", .key = "parallel.virtual_stages", .by_default = true,
     .pin = [](SearchSpec& s, const spec::PlanSpec& b) { return std::to_string(s.vpp = b.parallel.virtual_stages); },
     .values = [](AxisValues& v, const SearchSpec& s, const spec::ModelSpec&, const spec::PlanSpec&) {
       v.vpp = values_or(s.vpp, {1, 2, 4});
     },
     .count = [](const AxisValues& v) { return v.vpp.size(); },
     .apply = [](Layout& l, const AxisValues& v, size_t i) { l.vpp = v.vpp[i]; },
     // Interleaving needs whole chunks.
     .redundant = [](const Layout& l, const AxisValues& v, size_t) {
       return l.vpp > 1 && (l.pp == 1 || v.layers % (l.pp * l.vpp) != 0);
     }},
    {.dim = Dim::kZero, .name = "zero", .key = "parallel.zero", .by_default = true,
     .pin = [](SearchSpec& s, const spec::PlanSpec& b) { return std::to_string(s.zero = b.parallel.zero); },
     .values = [](AxisValues& v, const SearchSpec& s, const spec::ModelSpec&, const spec::PlanSpec&) {
       v.zero = s.zero >= 0 ? std::vector<int>{s.zero} : std::vector<int>{0, 1, 2, 3};
     },
     .count = [](const AxisValues& v) { return v.zero.size(); },
     .apply = [](Layout& l, const AxisValues& v, size_t i) { l.zero = v.zero[i]; },
     // Nothing to shard: the same layout as ZeRO-0.
     .redundant = [](const Layout& l, const AxisValues&, size_t) {
       return l.zero > 0 && l.dp * l.cp == 1 && !l.offload.any();
     }},
    {.dim = Dim::kOffload, .name = "offload", .key = "offload.optimizer", .also_key = "offload.params",
     .shown_pinned = false,
     .search = [](SearchSpec& s, const spec::ModelSpec&, const spec::HardwareSpec&, const spec::PlanSpec& b) {
       // The model state's offload is searched; activation offloading stays the plan's.
       s.offload = searchable_offloads();
       for (auto& o : s.offload) o.activations = b.offload.activations;
     },
     .pin = [](SearchSpec& s, const spec::PlanSpec& b) {
       s.offload = {b.offload};
       return offload_text(b.offload);
     },
     .values = [](AxisValues& v, const SearchSpec& s, const spec::ModelSpec&, const spec::PlanSpec& b) {
       v.offload = s.offload.empty() ? std::vector<spec::OffloadSpec>{b.offload} : s.offload;
     },
     .count = [](const AxisValues& v) { return v.offload.size(); },
     .apply = [](Layout& l, const AxisValues& v, size_t i) { l.offload = v.offload[i]; }},
};
#pragma GCC diagnostic pop

constexpr size_t kAxisCount = std::size(kAxes);
static_assert(kAxisCount == kDimCount);

double score(Objective o, const engine::Prediction& p) {
  switch (o) {
    case Objective::kTime: return p.step.time_s;
    case Objective::kCost: return p.totals.cost_usd > 0 ? p.totals.cost_usd : p.step.time_s * p.step.gpus;
    case Objective::kMfu: return -p.step.mfu;
  }
  return p.step.time_s;
}

/// The layout as one key. The structured binding lists every field, so a
/// field added to Layout (or Recompute) stops this compiling until it is
/// added here too, and two distinct layouts never rank equal. CP comes
/// before DP: at a fixed GPU count, an exact tie then goes to the plainer
/// layout (fewer context-parallel ranks, more data-parallel replicas).
auto layout_key(const Layout& l) {
  const auto& [tp, pp, dp, cp, ep, micro_batch, vpp, zero, sp, recompute, precision, framework, tp_overlap,
               fp8_recipe, offload, first_stage_layers, last_stage_layers, dispatcher] = l;
  const auto& [recompute_kind, every_k, block_layers, recompute_modules] = recompute;
  const auto& [offload_optimizer, offload_params, offload_activations] = offload;
  return std::tuple(tp, pp, cp, dp, ep, micro_batch, vpp, zero, sp, static_cast<int>(recompute_kind), every_k,
                    block_layers, static_cast<int>(recompute_modules), static_cast<int>(precision),
                    static_cast<int>(framework), tp_overlap, static_cast<int>(fp8_recipe), static_cast<int>(offload_optimizer),
                    static_cast<int>(offload_params), static_cast<int>(offload_activations), first_stage_layers,
                    last_stage_layers,
                    static_cast<int>(dispatcher));
}

/// Candidates kept per worker for `top` rows: rows are exact-tie groups, so
/// more candidates than rows; a group cut off by this limit is dropped (run()).
size_t keep_count(int top) { return static_cast<size_t>(std::max(top, 0)) * 8 + 64; }

/// Whether keep_top keeps `c`: it reads the candidate's score, memory and layout alone.
bool enters_top(const std::vector<Candidate>& top, const Candidate& c, size_t k) {
  return k >= 1 && (top.size() < k || ranks_before(c, top.front()));
}

/// Keeps the best k seen so far in a heap whose front is the worst kept
/// (the one that ranks last); a candidate enters only if it ranks before it.
void keep_top(std::vector<Candidate>& top, const Candidate& c, size_t k) {
  if (!enters_top(top, c, k)) return;
  if (top.size() < k) {
    top.push_back(c);
    std::push_heap(top.begin(), top.end(), ranks_before);
    return;
  }
  std::pop_heap(top.begin(), top.end(), ranks_before);
  top.back() = c;
  std::push_heap(top.begin(), top.end(), ranks_before);
}

/// Sorted candidates of single layouts -> rows: each exact tie collapses onto
/// its first (plainest) layout. `cut`: the list was cut at a limit, so its
/// last group may be incomplete and is dropped (unless it is the only one).
std::vector<Candidate> collapse(std::vector<Candidate>& sorted, int top, bool cut) {
  // In place: each group's first candidate moves to the next row slot of
  // `sorted` and takes the rest's layouts, in one allocation per group (a
  // search's last step: growing vectors here cost more than the sort).
  size_t rows = 0;
  for (size_t i = 0; i < sorted.size();) {
    size_t end = i + 1;
    while (end < sorted.size() && ties(sorted[i], sorted[end])) ++end;
    Candidate& row = sorted[rows];
    if (rows != i) row = std::move(sorted[i]);
    row.equivalent.reserve(row.equivalent.size() + (end - i - 1));
    for (size_t k = i + 1; k < end; ++k) row.equivalent.push_back(sorted[k].layout);
    ++rows;
    i = end;
  }
  sorted.resize(rows);
  if (cut && sorted.size() > 1) sorted.pop_back();
  if (static_cast<int>(sorted.size()) > top) sorted.resize(std::max(0, top));
  return std::move(sorted);
}

/// The search's worker threads, started once and kept (starting and
/// joining a thread per search took about 0.3 ms of a 7 ms two-thread 175B
/// search). run(n, f) calls f(1) .. f(n-1) on pool threads and f(0) on the
/// caller, and returns when all have returned. One search at a time uses
/// the pool; a second caller waits for it. A caller done first spins for
/// the others a little before it sleeps: they take the last work items
/// together, so the other ends within about one item (tens of
/// microseconds), while waking from a condition variable took about 50 us
/// on the 2-core development VM, 2% of a two-thread 175B search.
class WorkerPool {
 public:
  static WorkerPool& instance() {
    static WorkerPool pool;
    return pool;
  }

  void run(int n, const std::function<void(int)>& f) {
    if (n <= 1) {
      f(0);
      return;
    }
    const std::lock_guard<std::mutex> one_search(run_mu_);
    {
      std::unique_lock<std::mutex> lock(mu_);
      while (static_cast<int>(threads_.size()) < n - 1) {
        const int id = static_cast<int>(threads_.size()) + 1;
        threads_.emplace_back([this, id] { serve(id); });
      }
      job_ = &f;
      wanted_ = n;
      pending_.store(n - 1, std::memory_order_relaxed);
      ++generation_;
    }
    wake_.notify_all();
    f(0);
    const auto spin_until = std::chrono::steady_clock::now() + kSpin;
    while (pending_.load(std::memory_order_acquire) != 0 && std::chrono::steady_clock::now() < spin_until) {
    }
    std::unique_lock<std::mutex> lock(mu_);
    done_.wait(lock, [this] { return pending_.load(std::memory_order_relaxed) == 0; });
    job_ = nullptr;
  }

  ~WorkerPool() {
    {
      const std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    wake_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  void serve(int id) {
    std::uint64_t seen = 0;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      if (id >= wanted_) continue;  // not needed this time
      const std::function<void(int)>* job = job_;
      lock.unlock();
      (*job)(id);
      lock.lock();
      if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) done_.notify_one();
    }
  }

  /// How long a caller done first spins before it sleeps.
  static constexpr std::chrono::microseconds kSpin{500};

  std::mutex run_mu_, mu_;
  std::condition_variable wake_, done_;
  std::vector<std::thread> threads_;
  const std::function<void(int)>* job_ = nullptr;
  std::uint64_t generation_ = 0;
  int wanted_ = 0;
  std::atomic<int> pending_{0};  // pool threads still in the job: written under mu_, read by a spinning caller
  bool stop_ = false;
};

void add_counts(SearchCounts& a, const SearchCounts& b) {
  a.enumerated += b.enumerated;
  a.pruned += b.pruned;
  a.evaluated += b.evaluated;
  a.infeasible += b.infeasible;
  a.graphs += b.graphs;
  a.shape += b.shape;
  a.batch += b.batch;
  a.redundant += b.redundant;
  a.plan += b.plan;
  a.state += b.state;
  a.over_memory += b.over_memory;
}

}  // namespace

std::span<const Axis> axes() { return kAxes; }

const Axis& axis(Dim d) {
  for (const Axis& a : kAxes)
    if (a.dim == d) return a;
  return kAxes[0];  // unreachable: every Dim has its entry (static_assert above, axes_test)
}

spec::Scope scope_of(const Axis& a) {
  const spec::PlanField* f = spec::find_plan_field(a.key);
  return f ? f->scope : spec::Scope::kNone;
}

std::string_view name(Dim d) { return axis(d).name; }

std::optional<Dim> parse_dim(std::string_view s) {
  if (s == "micro_batch") return Dim::kMicroBatch;
  for (const Axis& a : kAxes)
    if (a.name == s) return a.dim;
  return std::nullopt;
}

std::string dim_choices() {
  std::string o;
  for (int i = 0; i < kDimCount; ++i) o += (i ? ", " : "") + std::string(name(static_cast<Dim>(i)));
  return o;
}

std::vector<spec::Precision> searchable_precisions(const spec::HardwareSpec& hw, const spec::PlanSpec& base) {
  std::vector<spec::Precision> out{spec::Precision::kBf16};
  if (hw.supports(spec::Peak::kFp8) && base.finetune.mode != spec::FinetuneMode::kQlora)
    out.push_back(spec::Precision::kFp8);
  return out;
}

std::vector<spec::OffloadSpec> searchable_offloads() {
  using D = spec::OffloadDevice;
  return {{D::kNone, D::kNone}, {D::kCpu, D::kNone}, {D::kCpu, D::kCpu}};
}

std::vector<int> searchable_block_quarters() { return {1, 2, 3}; }

std::vector<StageTrim> searchable_stage_trims() { return {{0, 0}, {0, 1}, {1, 1}, {1, 0}}; }

std::vector<spec::Fp8Recipe> searchable_fp8_recipes(const spec::ModelSpec& m, const spec::HardwareSpec& hw,
                                                    const spec::PlanSpec& base) {
  std::vector<spec::Fp8Recipe> out;
  for (auto r : {spec::Fp8Recipe::kDelayed, spec::Fp8Recipe::kTensorwise, spec::Fp8Recipe::kBlockwise,
                 spec::Fp8Recipe::kMxfp8, spec::Fp8Recipe::kRowwise}) {
    if (!spec::offers_fp8_recipe(spec::framework(base.framework), r)) continue;
    spec::PlanSpec probe = base;
    probe.parallel = {};
    probe.micro_batch = 1;
    probe.global_batch = 0;
    probe.precision = spec::Precision::kFp8;
    probe.fp8_recipe = r;
    if (engine::check_plan(m, probe, hw).field != "fp8.recipe") out.push_back(r);
  }
  return out;
}

bool ranks_before(const Candidate& a, const Candidate& b) {
  if (const auto c = std::strong_order(a.score, b.score); c != 0) return c < 0;
  if (const auto c = std::strong_order(a.memory_bytes, b.memory_bytes); c != 0) return c < 0;
  return layout_key(a.layout) < layout_key(b.layout);
}

bool ties(const Candidate& a, const Candidate& b) {
  return std::strong_order(a.score, b.score) == 0 && std::strong_order(a.step_time_s, b.step_time_s) == 0 &&
         std::strong_order(a.memory_bytes, b.memory_bytes) == 0;
}

std::string to_string(Objective o) {
  switch (o) {
    case Objective::kTime: return "time";
    case Objective::kCost: return "cost";
    case Objective::kMfu: return "mfu";
  }
  return "time";
}

namespace {

/// The plan fields the layouts that share one micro-batch summary differ in
/// (ZeRO, virtual stages, offload): plan_for sets them, and the search sets
/// them alone between those layouts rather than copying the whole plan again.
void set_step_fields(spec::PlanSpec& p, const Layout& l) {
  p.parallel.zero = l.zero;
  p.parallel.virtual_stages = l.vpp;
  p.offload = l.offload;
}

}  // namespace

spec::PlanSpec plan_for(const spec::PlanSpec& base, const Layout& l, int global_batch) {
  spec::PlanSpec p = base;
  set_step_fields(p, l);
  p.parallel.tp = l.tp;
  p.parallel.pp = l.pp;
  p.parallel.dp = l.dp;
  p.parallel.cp = l.cp;
  p.parallel.ep = l.ep;
  p.parallel.sp = l.sp;
  p.parallel.tp_comm_overlap = l.tp_overlap;
  p.moe.dispatcher = l.dispatcher;
  p.fp8_recipe = l.fp8_recipe;
  p.parallel.first_stage_layers = l.first_stage_layers;
  p.parallel.last_stage_layers = l.last_stage_layers;
  p.micro_batch = l.micro_batch;
  p.recompute = l.recompute;
  p.precision = l.precision;
  if (l.framework != base.framework) {
    p.framework = l.framework;
    const auto& f = spec::framework(l.framework);
    if (!p.attention_given) p.attention = f.attention;
    if (!p.fusion_given) p.fusion = f.fusion;
  }
  if (global_batch > 0) p.global_batch = global_batch;
  return p;
}

int min_gpus_for_state(const spec::ModelSpec& m, const spec::PlanSpec& base, const spec::HardwareSpec& hw,
                       double headroom) {
  const double limit = hw.memory_bytes * (1 - headroom);
  auto fits = [&](int n) {
    spec::PlanSpec p = base;
    p.parallel = {};
    p.parallel.dp = n;
    p.parallel.zero = 3;
    return memory::model_state(m, p).total() <= limit;
  };
  constexpr int kMax = 1 << 20;
  int hi = 1;
  while (hi <= kMax && !fits(hi)) hi *= 2;
  if (hi > kMax) return 0;
  int lo = hi / 2;  // does not fit (or 0)
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    (fits(mid) ? hi : lo) = mid;
  }
  return hi;
}

std::string stages_text(const Layout& l) {
  if (l.first_stage_layers <= 0 && l.last_stage_layers <= 0) return "even";
  if (l.last_stage_layers <= 0) return fmt::format("first {}", l.first_stage_layers);
  if (l.first_stage_layers <= 0) return fmt::format("last {}", l.last_stage_layers);
  return fmt::format("first {} last {}", l.first_stage_layers, l.last_stage_layers);
}

std::string offload_text(const spec::OffloadSpec& o) {
  if (o.params_on_cpu()) return o.optimizer_on_cpu() ? "offload optimizer+params" : "offload params";
  return o.optimizer_on_cpu() ? "offload optimizer" : "no offload";
}

std::string tie_text(const Candidate& c) {
  if (c.equivalent.empty()) return "";
  std::vector<const Layout*> all{&c.layout};
  for (const auto& l : c.equivalent) all.push_back(&l);
  using Get = std::string (*)(const Layout&);
  static const Get kFields[] = {
      [](const Layout& l) { return fmt::format("TP{}", l.tp); },
      [](const Layout& l) { return fmt::format("PP{}", l.pp); },
      [](const Layout& l) { return fmt::format("DP{}", l.dp); },
      [](const Layout& l) { return fmt::format("CP{}", l.cp); },
      [](const Layout& l) { return fmt::format("EP{}", l.ep); },
      [](const Layout& l) { return fmt::format("mb{}", l.micro_batch); },
      [](const Layout& l) { return fmt::format("v{}", l.vpp); },
      [](const Layout& l) { return fmt::format("ZeRO-{}", l.zero); },
      [](const Layout& l) { return std::string(l.sp ? "SP" : "no SP"); },
      [](const Layout& l) { return spec::to_string(l.recompute); },
      [](const Layout& l) { return spec::to_string(l.precision); },
      [](const Layout& l) { return spec::framework(l.framework).id; },
      [](const Layout& l) { return std::string(l.tp_overlap ? "TP overlap" : "no TP overlap"); },
      [](const Layout& l) { return l.precision == spec::Precision::kFp8 ? spec::to_string(l.fp8_recipe) : ""; },
      [](const Layout& l) { return offload_text(l.offload); },
      [](const Layout& l) { return l.first_stage_layers > 0 || l.last_stage_layers > 0 ? "stages " + stages_text(l)
                                                                                        : std::string("even stages"); },
      [](const Layout& l) { return l.ep > 1 ? spec::to_string(l.dispatcher) + " dispatcher" : std::string(); },
  };
  std::string out;
  for (Get get : kFields) {
    std::vector<std::string> values;
    for (const Layout* l : all)
      if (auto v = get(*l); std::find(values.begin(), values.end(), v) == values.end()) values.push_back(std::move(v));
    if (values.size() < 2) continue;
    std::string part;
    for (const auto& v : values) part += (part.empty() ? "" : "/") + v;
    out += (out.empty() ? "" : " · ") + part;
  }
  return out;
}

engine::Problem check_fixed(const SearchSpec& s, const spec::ModelSpec& m, const spec::PlanSpec& base) {
  const int seq = graph::seq_len(m, base);
  if (s.gpus < 1) return {"--gpus", "expected at least 1 GPU"};
  if (s.tp > 0 && m.heads % s.tp != 0)
    return {"--tp", fmt::format("TP {} does not divide {} attention heads", s.tp, m.heads)};
  if (s.pp > 0 && m.layers % s.pp != 0)
    return {"--pp", fmt::format("PP {} does not divide {} layers", s.pp, m.layers)};
  if (s.cp > 0 && seq % s.cp != 0)
    return {"--cp", fmt::format("CP {} does not divide the sequence length {}", s.cp, seq)};
  if (s.ep > 1 && !m.is_moe()) return {"--ep", "expert parallelism needs a mixture-of-experts model"};
  if (s.ep > 1 && m.moe.experts % s.ep != 0)
    return {"--ep", fmt::format("EP {} does not divide {} experts", s.ep, m.moe.experts)};
  const long long fixed_product = static_cast<long long>(s.tp > 0 ? s.tp : 1) * (s.pp > 0 ? s.pp : 1) *
                                  (s.cp > 0 ? s.cp : 1) * (s.dp > 0 ? s.dp : 1);
  if (s.gpus % fixed_product != 0 || (s.tp > 0 && s.pp > 0 && s.cp > 0 && s.dp > 0 && fixed_product != s.gpus))
    return {"--gpus", fmt::format("TP x PP x CP x DP = {} does not match {} GPUs", fixed_product, s.gpus)};
  const int gb = s.global_batch > 0 ? s.global_batch : base.global_batch;
  if (gb <= 0) return {"--global-batch", "a search needs the global batch (sequences per step)"};
  if (s.micro_batch > 0 && s.micro_batch > gb)
    return {"--micro-batch", fmt::format("micro-batch {} exceeds the global batch {}", s.micro_batch, gb)};
  if (!(s.headroom >= 0 && s.headroom < 1)) return {"--headroom", "expected from 0% to under 100%"};
  return {};
}

SearchResult run(const SearchSpec& s, const spec::ModelSpec& m, const spec::PlanSpec& base,
                 const spec::HardwareSpec& hw, bool use_calibration, Workspace* workspace) {
  const auto t0 = std::chrono::steady_clock::now();
  AxisValues d;
  d.layers = m.layers;
  for (const Axis& a : kAxes)
    if (a.values) a.values(d, s, m, base);
  // The space's framework profiles are read here, on the calling thread
  // (spec::framework reads each on first use): a malformed one is then the
  // search's error, not a worker's. A plan with CPU offload that its
  // framework lacks names every framework that offers it
  // (engine::check_plan), so offload reads them all.
  for (const std::uint8_t f : d.fw) (void)spec::framework(f);
  if (std::any_of(d.offload.begin(), d.offload.end(), [](const spec::OffloadSpec& o) { return o.any(); }))
    (void)spec::frameworks();
  engine::EvalOptions ro;
  ro.use_calibration = use_calibration;
  const cost::CostParams c = engine::resolve_for(hw, base, ro);
  const int gb = s.global_batch > 0 ? s.global_batch : base.global_batch;
  const int seq = graph::seq_len(m, base);
  const double memory_limit = hw.memory_bytes * (1 - s.headroom);
  // A layout is one value index (digit) per axis with values of its own.
  // The digits by scope: a unit of work is one point of the graph's axes (a
  // micro-batch shape: tp, cp, ep, micro, recompute with its share of block
  // recomputation, precision, framework, TP overlap, fp8 recipe); within
  // it, one graph per point of the stage split's axes (PP degree, stage
  // split): those graphs hold the same kernels at other counts, so their
  // costs are formed once (engine::CostMemo); within a graph, the layouts
  // at each point of the step's axes (virtual stages, ZeRO stages and
  // offload) share it, and dp follows from the GPU count. `order_digits` counts
  // every digit in table order: a layout's place in the enumeration.
  MixedRadix graph_digits, layout_digits, step_digits, order_digits, base_digits, params_digits;
  size_t graph_axis[MixedRadix::kMaxDigits], layout_axis[MixedRadix::kMaxDigits],
      step_axis[MixedRadix::kMaxDigits], order_axis[MixedRadix::kMaxDigits], base_axis[MixedRadix::kMaxDigits];
  size_t rec_axis = 0, tp_axis = 0, ep_axis = 0, stages_axis = 0;
  for (size_t a = 0; a < kAxisCount; ++a) {
    const Axis& x = kAxes[a];
    if (!x.count) continue;
    const size_t r = x.count(d);
    order_axis[order_digits.size()] = a;
    order_digits.push(r);
    switch (scope_of(x)) {
      case spec::Scope::kGraph:
        graph_axis[graph_digits.size()] = a;
        graph_digits.push(r);
        // Units that differ only in recomputation share their graph's base
        // (techniques::build_microbatch_base): they form one work item.
        if (x.dim != Dim::kRecompute) {
          base_axis[base_digits.size()] = a;
          base_digits.push(r);
        }
        break;
      case spec::Scope::kLayout:
        layout_axis[layout_digits.size()] = a;
        layout_digits.push(r);
        break;
      default:
        step_axis[step_digits.size()] = a;
        step_digits.push(r);
        break;
    }
    if (x.dim == Dim::kRecompute) rec_axis = a;
    if (x.dim == Dim::kTp) tp_axis = a;
    if (x.dim == Dim::kEp) ep_axis = a;
    if (x.dim == Dim::kStages) stages_axis = a;
  }
  // Which of the enumeration's digits are the step's (1).
  std::uint8_t is_step_digit[MixedRadix::kMaxDigits] = {};
  for (size_t i = 0; i < order_digits.size(); ++i)
    is_step_digit[i] = scope_of(kAxes[order_axis[i]]) == spec::Scope::kStep ? 1 : 0;
  // Each stage's parameters read TP, EP and the stage split alone.
  params_digits.push(d.tp.size());
  params_digits.push(d.ep.size());
  params_digits.push(layout_digits.count());
  const size_t units = graph_digits.count();
  const size_t per_unit = layout_digits.count();
  const size_t inner = step_digits.count();
  const size_t keep = keep_count(s.top);
  // This shard's units: u = shard_index, shard_index + shard_count, ...
  const size_t shard_units =
      units > static_cast<size_t>(s.shard_index)
          ? (units - static_cast<size_t>(s.shard_index) + s.shard_count - 1) / static_cast<size_t>(s.shard_count)
          : 0;
  const size_t shard_layouts = shard_units * per_unit * inner;
  // Threads take units from one counter, so a thread that finishes early
  // takes more; a space too small to repay starting a thread (a few
  // milliseconds of work at most) runs on one.
  int threads = s.threads > 0 ? s.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  constexpr size_t kLayoutsPerExtraThread = 2048;
  threads = static_cast<int>(std::clamp<size_t>(shard_layouts / kLayoutsPerExtraThread, 1,
                                                 std::min<size_t>(static_cast<size_t>(threads), std::max<size_t>(shard_units, 1))));
  Workspace own;
  Workspace& ws = workspace ? *workspace : own;
  if (ws.workers.size() < static_cast<size_t>(threads)) ws.workers.resize(static_cast<size_t>(threads));
  std::vector<SearchResult> parts(threads);
  std::vector<size_t> first_problem_at(threads, std::numeric_limits<size_t>::max());
  // Each qualifying layout's step time is appended to its thread's list,
  // unit by unit; a unit's times come out in layout order (stage split,
  // then the step's axes), and unit_times[k] says where unit k's are. The
  // interval count (search::search_intervals) reads them in layout order
  // whatever thread evaluated them. The lists are each worker's in the
  // caller's Workspace and outlive the search, so with the same workspace
  // the per-layout path allocates nothing once they have grown.
  // A slot per enumerated layout (8 bytes each, 12 MB for a wide search)
  // cost more in first-touch page faults than the search itself.
  struct UnitTimes {
    std::uint32_t thread = 0;
    std::uint32_t begin = 0, end = 0;
  };
  std::vector<UnitTimes> unit_times(shard_units);
  std::vector<std::vector<double>*> thread_times(threads, nullptr);
  // Unit k of the shard: every axis's digit (those of the stage split and
  // the step set per layout) and its layout with the graph's axes applied
  // (block:K is set per PP).
  struct Unit {
    size_t digit[kAxisCount] = {};
    Layout l;
  };
  auto unit_of = [&](size_t k) {
    Unit u;
    size_t g[MixedRadix::kMaxDigits];
    graph_digits.set(k * static_cast<size_t>(s.shard_count) + static_cast<size_t>(s.shard_index), g);
    for (size_t i = 0; i < graph_digits.size(); ++i) {
      const size_t a = graph_axis[i];
      u.digit[a] = g[i];
      kAxes[a].apply(u.l, d, g[i]);
    }
    return u;
  };
  // Sets the stage split's digits of point j into `digit`, and its axes into l.
  auto set_split = [&](size_t* digit, Layout& l, size_t j) {
    size_t g[MixedRadix::kMaxDigits];
    layout_digits.set(j, g);
    for (size_t i = 0; i < layout_digits.size(); ++i) {
      const size_t a = layout_axis[i];
      digit[a] = g[i];
      if (kAxes[a].apply) kAxes[a].apply(l, d, g[i]);
    }
  };
  // Why a unit's layouts at one PP degree and stage split are left out
  // before any is evaluated; kKept when they are not.
  enum class Cut : std::uint8_t { kKept, kShape, kRedundant, kBatch };
  // The stage splits at each point of the split's axes, formed once: the
  // layers of the first and last stage, and whether the split is left out.
  // Searched, a trim at PP 1 is the even layout again; a split whose other
  // stages cannot share the rest evenly (spec::check_stage_layers, as
  // engine::check_plan reads it) does not divide. Not searched, the base
  // plan's split, which engine::check_plan judges per layout.
  struct Split {
    int first = 0, last = 0;
    Cut cut = Cut::kKept;
  };
  std::vector<Split> splits(per_unit);
  for (size_t j = 0; j < per_unit; ++j) {
    size_t digit[kAxisCount] = {};
    Layout l;
    set_split(digit, l, j);
    const int pp = l.pp;
    const StageTrim& t = d.stages[digit[stages_axis]];
    Split& sp = splits[j];
    if (!d.stages_searched) {
      sp.first = t.first, sp.last = t.last;
      continue;
    }
    if (t.first <= 0 && t.last <= 0) continue;
    if (pp == 1) {
      sp.cut = Cut::kRedundant;
      continue;
    }
    // The trimmed ends lighter by the least d with which the other stages
    // share the rest evenly (96 layers at PP 8: the last stage 5, the
    // others 13; or both ends 9, the middle six 13).
    const int even = m.layers / pp;
    sp.cut = Cut::kShape;
    for (int less = 1; less < even && m.layers % pp == 0; ++less) {
      const int first = t.first > 0 ? even - less : 0, last = t.last > 0 ? even - less : 0;
      if (spec::check_stage_layers(m.layers, pp, first, last).empty()) {
        sp = {first, last, Cut::kKept};
        break;
      }
    }
  }
  // Sets the stage split's axes (point j), l.dp and block:K, and says
  // whether the layouts at j are left out.
  auto cut_of = [&](Unit& u, Layout& l, size_t j) {
    set_split(u.digit, l, j);
    const int tpc = l.tp * l.pp * l.cp;
    const bool valid_shape = s.gpus % tpc == 0 && m.heads % l.tp == 0 && m.layers % l.pp == 0 &&
                             seq % l.cp == 0 && (l.cp == 1 || seq / l.cp >= 128);
    l.dp = valid_shape ? s.gpus / tpc : 0;
    if (!valid_shape || (s.dp > 0 && l.dp != s.dp) ||
        (l.ep > 1 && (m.moe.experts % l.ep != 0 || (l.dp * l.cp) % l.ep != 0)))
      return Cut::kShape;
    const Split& sp = splits[j];
    l.first_stage_layers = sp.first;
    l.last_stage_layers = sp.last;
    if (sp.cut == Cut::kShape) return Cut::kShape;
    if (const RecomputeChoice& rc = d.rec[u.digit[rec_axis]]; rc.quarters > 0)
      l.recompute.block_layers = block_layers_at(m.layers, l.pp, rc.quarters);
    bool redundant = sp.cut == Cut::kRedundant;
    for (size_t i = 0; i < graph_digits.size(); ++i) {
      const Axis& a = kAxes[graph_axis[i]];
      if (a.redundant && a.redundant(l, d, u.digit[graph_axis[i]])) redundant = true;
    }
    if (redundant) return Cut::kRedundant;
    if (gb % (static_cast<long long>(l.micro_batch) * l.dp) != 0) return Cut::kBatch;
    return Cut::kKept;
  };
  // Threads take the units with the most PP degrees left to evaluate first
  // (longest first, so that no thread ends on a long unit while the other
  // waits); ties by their base (every graph digit but the recomputation's),
  // then in unit order. Units of one base that follow each other form one
  // work item: they differ only in recomputation, so at each PP degree and
  // stage split they share the micro-batch graph's base
  // (techniques::build_microbatch_base), built once for all of them. The
  // order changes nothing in the answer: rows rank by ranks_before, step
  // times are gathered unit by unit, and the first refused plan is the first
  // in the enumeration order.
  //
  // A unit's length is counted once per base, on the base's unit with the
  // first recomputation, as the PP degrees and stage splits that are not
  // left out for their shape or batch (those the unit's recomputation,
  // TP overlap or fp8 recipe make redundant count too, and take no time):
  // every unit of a base then has one length, so they sort together and
  // form one work item, and the count is made for a sixth of the units (the
  // 175B search's six recomputations; it was 2% of a two-thread search).
  struct Ordered {
    std::uint32_t kept;  // the base's PP degrees and stage splits not left out for their shape or batch
    std::uint32_t base;  // the unit's graph digits but the recomputation's
    std::uint32_t unit;
  };
  constexpr std::uint32_t kUncounted = std::numeric_limits<std::uint32_t>::max();
  std::vector<std::uint32_t> kept_of_base(base_digits.count(), kUncounted);
  std::vector<Ordered> unit_order(shard_units);
  for (size_t k = 0; k < shard_units; ++k) {
    const Unit u = unit_of(k);
    size_t b[MixedRadix::kMaxDigits];
    for (size_t i = 0; i < base_digits.size(); ++i) b[i] = u.digit[base_axis[i]];
    const size_t base_at = base_digits.index(b);
    std::uint32_t& kept = kept_of_base[base_at];
    if (kept == kUncounted) {
      Unit v = u;
      v.digit[rec_axis] = 0;
      kAxes[rec_axis].apply(v.l, d, 0);
      kept = 0;
      for (size_t j = 0; j < per_unit; ++j) {
        const Cut cut = cut_of(v, v.l, j);
        kept += cut == Cut::kKept || cut == Cut::kRedundant ? 1 : 0;
      }
    }
    unit_order[k] = {kept, static_cast<std::uint32_t>(base_at), static_cast<std::uint32_t>(k)};
  }
  std::sort(unit_order.begin(), unit_order.end(), [](const Ordered& a, const Ordered& b) {
    return a.kept != b.kept ? a.kept > b.kept : a.base != b.base ? a.base < b.base : a.unit < b.unit;
  });
  std::vector<std::uint32_t> item_start;  // work item i: unit_order[item_start[i] .. item_start[i + 1])
  for (size_t i = 0; i < shard_units; ++i)
    if (i == 0 || unit_order[i].base != unit_order[i - 1].base) item_start.push_back(static_cast<std::uint32_t>(i));
  item_start.push_back(static_cast<std::uint32_t>(shard_units));
  const size_t items = item_start.size() - 1;
  // The step's axes but the virtual stages: what the model state reads.
  MixedRadix state_digits;
  size_t state_axis[MixedRadix::kMaxDigits];
  for (size_t i = 0; i < step_digits.size(); ++i)
    if (kAxes[step_axis[i]].dim != Dim::kVpp) {
      state_axis[state_digits.size()] = step_axis[i];
      state_digits.push(step_digits.radix(i));
    }
  const size_t zo = state_digits.count();
  // The step axes' effects, in digit order (the innermost loop reads them).
  decltype(Axis::apply) step_apply[MixedRadix::kMaxDigits];
  decltype(Axis::redundant) step_redundant[MixedRadix::kMaxDigits];
  for (size_t i = 0; i < step_digits.size(); ++i) {
    step_apply[i] = kAxes[step_axis[i]].apply;
    step_redundant[i] = kAxes[step_axis[i]].redundant;
  }
  std::atomic<size_t> next_item{0};
  auto worker = [&](int tid) {
    // The thread's result is its own until the end (parts[] side by side
    // would share cache lines: every layout bumps a count).
    SearchResult r;
    SearchCounts& n = r.counts;
    size_t first_at = std::numeric_limits<size_t>::max();
    r.top.reserve(keep);
    graph::Graph g;
    engine::MicrobatchSummary sum;
    Workspace::Worker& own_ws = ws.workers[static_cast<size_t>(tid)];
    // The memo's costs are keyed by the address of this search's CostParams,
    // which a later search may reuse: cleared (its shape cache is keyed by
    // CostParams::id, unique to each resolve, and kept).
    engine::CostMemo& memo = own_ws.memo;
    memo.kernels.clear();
    memo.costs.clear();
    memo.params = nullptr;
    ScopeMemos& memos = own_ws.memos;
    memos.stage_params.reset(params_digits.count());
    engine::Prediction pred;
    Candidate scratch;  // every field is set before keep_top reads it
    const bool totals_scored = s.objective == Objective::kCost;
    engine::EvalOptions opt;
    opt.keep_kernels = false;
    opt.totals = false;  // formed below for the layouts the top keeps
    opt.use_calibration = use_calibration;
    opt.cache = &memo.cache;
    pred.calibrated = c.calibrated;
    std::vector<double>& kept_times = own_ws.kept_times;
    kept_times.clear();
    thread_times[tid] = &kept_times;
    for (size_t item = next_item.fetch_add(1, std::memory_order_relaxed); item < items;
         item = next_item.fetch_add(1, std::memory_order_relaxed)) {
      memos.graph_bases.reset(per_unit);
      memos.steps.reset(per_unit * inner);
      memos.states.reset(per_unit * zo);
      memos.state_bounds.reset(per_unit * zo);
      for (size_t next = item_start[item]; next < item_start[item + 1]; ++next) {
        const size_t k = unit_order[next].unit;
        Unit u = unit_of(k);
        Layout l = u.l;
        unit_times[k].thread = static_cast<std::uint32_t>(tid);
        unit_times[k].begin = static_cast<std::uint32_t>(kept_times.size());
        for (size_t j = 0; j < per_unit; ++j) {
          n.enumerated += inner;
          if (const Cut cut = cut_of(u, l, j); cut != Cut::kKept) {
            n.pruned += inner;
            (cut == Cut::kShape ? n.shape : cut == Cut::kRedundant ? n.redundant : n.batch) += inner;
            continue;
          }
          // The place in the enumeration of the graph's first layout: the
          // step's digits come last in table order (search_axes_test), so
          // layout z of the graph is at order_at + z.
          size_t order_at = 0;
          for (size_t i = 0; i < order_digits.size(); ++i)
            order_at = order_at * order_digits.radix(i) + (is_step_digit[i] ? 0 : u.digit[order_axis[i]]);
          bool built = false, costed = false;
          spec::PlanSpec p = plan_for(base, l, gb);  // the step fields set per layout below
          // Each stage's parameters (the step fields leave them unchanged):
          // the larger end's bound the model state; the graph's summary keeps them all.
          const size_t params_key[3] = {u.digit[tp_axis], u.digit[ep_axis], j};
          const techniques::StageParams& held = memos.stage_params.get(
              params_digits.index(params_key), [&](techniques::StageParams& e) { e = techniques::stage_params(m, p); });
          // The checks that read no step field, once for all the graph's layouts.
          const bool graph_refused = !engine::check_graph_field(m, p, hw).empty();
          // The step's points in order, counted digit by digit: each step
          // sets only the axes whose digit changed (the last, mostly).
          size_t z_digit[MixedRadix::kMaxDigits] = {};
          for (size_t z = 0, changed = 0; z < inner; ++z, changed = step_digits.next(z_digit)) {
            for (size_t i = changed; i < step_digits.size(); ++i) {
              u.digit[step_axis[i]] = z_digit[i];
              step_apply[i](l, d, z_digit[i]);
            }
            bool redundant = false;
            for (size_t i = 0; i < step_digits.size() && !redundant; ++i)
              redundant = step_redundant[i] && step_redundant[i](l, d, z_digit[i]);
            if (redundant) {
              ++n.pruned;
              ++n.redundant;
              continue;
            }
            set_step_fields(p, l);
            if (graph_refused || !engine::check_step_field(m, p, hw).empty()) {
              ++n.pruned;
              ++n.plan;
              // The message only for the one reported.
              if (const size_t order = order_at + z; order < first_at) {
                first_at = order;
                r.first_problem = engine::check_plan(m, p, hw);
              }
              continue;
            }
            size_t state_key[MixedRadix::kMaxDigits];
            for (size_t i = 0; i < state_digits.size(); ++i) state_key[i] = u.digit[state_axis[i]];
            const size_t at_zo = j * zo + state_digits.index(state_key);  // stage split and (ZeRO, offload)
            const double bound = memos.state_bounds.get(
                at_zo, [&](double& e) { e = memory::model_state(p, held.largest()).total(); });
            if (bound > memory_limit) {  // a lower bound on the peak's upper end
              ++n.pruned;
              ++n.state;
              continue;
            }
            if (!built) {
              const graph::Graph& graph_base = memos.graph_bases.get(
                  j, [&](graph::Graph& e) { techniques::build_microbatch_base(e, m, p, hw); });
              engine::summarize_graph(sum, g, m, p, hw, &held, &graph_base);
              ++n.graphs;
              built = true;
            }
            // Memory first: a layout over it needs no step time (what it
            // would have been is read nowhere).
            const memory::StageStates& states = memos.states.get(
                at_zo, [&](memory::StageStates& e) { e = memory::stage_states(sum.facts, p, sum.params); });
            engine::finish_memory(pred, sum, m, p, hw, &states);
            ++n.evaluated;
            // memory::fit's rule: the peak's upper end within capacity x (1 - headroom).
            const double hi = memory_upper_bytes(pred.memory);
            if (pred.status != engine::Status::kOk || hi > memory_limit) {
              ++n.infeasible;
              ++n.over_memory;
              continue;
            }
            if (!costed) {  // the graph's kernels, costed once one of its layouts fits
              engine::summarize_costs(sum, g, m, p, c, memo);
              costed = true;
            }
            const engine::StepKernels& step = memos.steps.get(j * inner + z, [&](engine::StepKernels& e) {
              engine::build_step_kernels(e, sum, m, p, c, &memo.cache);
            });
            engine::finish_time(pred, sum, step, m, p, hw, opt);
            kept_times.push_back(pred.step.time_s);
            // The training totals only for a layout the top keeps, unless the score reads them.
            if (totals_scored) engine::finish_totals(pred, sum, p, hw);
            Candidate& cand = scratch;
            cand.layout = l;
            cand.score = score(s.objective, pred);
            cand.memory_bytes = pred.memory.total;
            if (!enters_top(r.top, cand, keep)) continue;
            if (!totals_scored) engine::finish_totals(pred, sum, p, hw);
            cand.step_time_s = pred.step.time_s;
            cand.mfu = pred.step.mfu;
            cand.hfu = pred.step.hfu;
            cand.memory_hi_bytes = hi;
            cand.tokens_per_s = pred.step.tokens_per_s;
            cand.bubble_fraction = pred.step.bubble_fraction;
            cand.exposed_comm_s = pred.step.exposed_comm_s;
            cand.all_to_all_s = pred.step.all_to_all_s;
            cand.days = pred.totals.wall_s / 86400.0;  // goodput-adjusted; 0 when it never completes
            cand.completes = pred.totals.completes;
            cand.gpu_hours = pred.totals.gpu_hours;
            cand.cost_usd = pred.totals.cost_usd;
            cand.tokens = pred.totals.tokens;
            cand.traits = uncertainty::traits_of(pred, p, hw);
            keep_top(r.top, cand, keep);
          }
        }
        unit_times[k].end = static_cast<std::uint32_t>(kept_times.size());
      }
    }
    // Best first: the heap keep_top kept, sorted here on the worker's own
    // core, so that the caller merges the threads' rows instead of sorting them.
    std::sort_heap(r.top.begin(), r.top.end(), ranks_before);
    parts[tid] = std::move(r);
    first_problem_at[tid] = first_at;
  };
  WorkerPool::instance().run(threads, worker);

  SearchResult out;
  std::vector<Candidate> all = std::move(parts[0].top);  // each part's rows best first (ranks_before)
  size_t first = 0;
  for (size_t t = 0; t < parts.size(); ++t) {
    auto& p = parts[t];
    add_counts(out.counts, p.counts);
    if (t > 0 && !p.top.empty()) {
      std::vector<Candidate> merged;
      merged.reserve(all.size() + p.top.size());
      std::merge(std::make_move_iterator(all.begin()), std::make_move_iterator(all.end()),
                 std::make_move_iterator(p.top.begin()), std::make_move_iterator(p.top.end()),
                 std::back_inserter(merged), ranks_before);
      all = std::move(merged);
    }
    if (first_problem_at[t] < first_problem_at[first]) first = t;
  }
  const size_t times = out.counts.evaluated - out.counts.infeasible;
  out.feasible_step_times_s.reserve(times);
  for (const UnitTimes& u : unit_times) {
    if (u.end == u.begin) continue;
    const std::vector<double>& from = *thread_times[u.thread];
    out.feasible_step_times_s.insert(out.feasible_step_times_s.end(), from.begin() + u.begin, from.begin() + u.end);
  }
  out.first_problem = parts[first].first_problem;
  const bool cut = times > keep;
  if (all.size() > keep) all.resize(keep);
  out.top = collapse(all, s.top, cut);
  if (out.top.empty() && out.counts.state > 0) out.state_min_gpus = min_gpus_for_state(m, base, hw, s.headroom);
  out.threads = threads;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

SearchResult merge(const std::vector<SearchResult>& parts, int top) {
  SearchResult out;
  size_t times = 0;
  for (const auto& p : parts) times += p.feasible_step_times_s.size();
  out.feasible_step_times_s.reserve(times);
  std::vector<Candidate> all;
  for (const auto& p : parts) {
    add_counts(out.counts, p.counts);
    out.seconds = std::max(out.seconds, p.seconds);
    for (const auto& c : p.top) {
      Candidate one = c;
      one.equivalent.clear();
      for (const auto& l : c.equivalent) {
        Candidate tie = one;
        tie.layout = l;
        tie.predict_command.clear();
        all.push_back(std::move(tie));
      }
      all.push_back(std::move(one));
    }
    out.feasible_step_times_s.insert(out.feasible_step_times_s.end(), p.feasible_step_times_s.begin(),
                                     p.feasible_step_times_s.end());
    out.feasible_times_kept = out.feasible_times_kept && p.feasible_times_kept;
    if (out.first_problem.field.empty()) out.first_problem = p.first_problem;
    out.state_min_gpus = std::max(out.state_min_gpus, p.state_min_gpus);
  }
  std::sort(all.begin(), all.end(), ranks_before);
  out.top = collapse(all, top, false);
  return out;
}

}  // namespace ridgeline::search
