// Configuration search: enumerates TP x PP x DP x CP x EP x micro-batch x
// virtual stages x recomputation x ZeRO stage x precision x framework for a
// GPU count and global batch (and, when asked, TP communication overlap, the
// fp8 recipe, CPU offload, block recomputation of part of each stage's
// layers and uneven pipeline stages), prunes what cannot be valid or cannot fit
// (model state alone above capacity), evaluates the rest with the engine
// (reusing one micro-batch graph across the layouts that share it, and its
// kernels' costs across the PP degrees of one micro-batch shape:
// engine::CostMemo) and keeps the best K rows. Each dimension is declared
// once in the axis table (axes(): its plan field, values and effect); a
// layout is one value index per axis, counted by one MixedRadix, and each
// scope level's memo (ScopeMemos) lives in the caller's Workspace. A dimension given a value
// (SearchSpec's fixed fields) is not searched. Exact ties (the same step time
// and peak memory) are one row that lists its equivalent layouts
// (Candidate::equivalent). Threads (a pool kept across searches) take
// micro-batch shapes from one counter, those with the most layouts to
// evaluate first; the answer does not depend on how many there are.
// Shardable (--shard i/N): shard i evaluates every N-th micro-batch shape
// (tp, cp, ep, micro-batch, recompute, precision, framework) with all its PP
// degrees and stage splits. Besides the best K, it keeps every qualifying configuration's step
// time (one 8-byte slot per layout of the shard, reserved once), so that how
// many lie within the best's prediction interval (search/interval_ranking.hpp)
// can be counted once the best is known. Units: seconds, bytes; headroom a fraction.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/engine/cost_memo.hpp"
#include "ridgeline/engine/engine.hpp"
#include "ridgeline/spec/plan_fields.hpp"
#include "ridgeline/uncertainty/interval.hpp"

namespace ridgeline::search {

enum class Objective : std::uint8_t { kTime, kCost, kMfu };

/// The dimensions a search varies, by their --search names.
enum class Dim : std::uint8_t {
  kTp, kPp, kDp, kCp, kEp, kMicroBatch, kVpp, kZero, kRecompute, kPrecision, kFramework, kTpOverlap, kFp8Recipe,
  kOffload, kRecomputeLayers, kStages, kSp, kDispatcher
};
inline constexpr int kDimCount = 18;
/// "tp", "pp", "dp", "cp", "ep", "mb", "vpp", "zero", "recompute", "precision", "framework", "tp_overlap",
/// "fp8_recipe", "offload", "recompute_layers", "stages", "sp", "dispatcher".
std::string_view name(Dim d);
std::optional<Dim> parse_dim(std::string_view s);
/// "tp, pp, dp, cp, ep, mb, vpp, zero, recompute, precision, framework, tp_overlap, fp8_recipe, offload,
/// recompute_layers, stages, sp, dispatcher".
std::string dim_choices();

/// The default memory headroom: a layout qualifies only when the upper end
/// of its peak-memory interval (uncertainty::memory_interval: the tensors
/// plus twice the framework's allocator reserve) is at most capacity x (1 -
/// headroom). The interval's upper end already covers the caching
/// allocator's usual reserve; 5% more is left for what no model of the
/// tensors sees: allocator fragmentation beyond the reserve (PyTorch's
/// expandable segments are not always on), NCCL and cuBLAS workspaces grown
/// at run time, and the CUDA context, about 0.5-1 GiB of an 80 GiB card.
inline constexpr double kDefaultHeadroom = memory::kDefaultHeadroom;

/// Which end stages a searched split makes lighter than an even share
/// (layers / PP): 1 = lighter, by the least number of layers with which the
/// other stages share the rest evenly at that PP; 0 = the even share.
struct StageTrim {
  int first = 0, last = 0;
  bool operator==(const StageTrim&) const = default;
};

struct SearchSpec {
  int gpus = 8;
  int global_batch = 0;  // sequences; 0 = the base plan's
  Objective objective = Objective::kTime;
  int top = 10;
  int shard_index = 0, shard_count = 1;
  int threads = 0;  // 0 = hardware concurrency; fewer for a small space (run())
  /// Fixed values (plan flags given, --fix, or the plan's values for the
  /// dimensions --search leaves out); -1 / empty = searched.
  int tp = -1, pp = -1, dp = -1, cp = -1, ep = -1, micro_batch = -1, vpp = -1, zero = -1;
  int sp = -1;  // -1: on with TP > 1 (Megatron's practice); 0 off; 1 on
  /// Sequence parallelism searched (`--search +sp`): off and on at each TP
  /// degree (`sp` unread). With TP 1 there is nothing to split: on is the
  /// same layout as off and is pruned as redundant.
  bool sp_searched = false;
  std::vector<spec::Recompute> recompute;       // empty = none, selective, full
  std::vector<spec::Precision> precision;       // empty = the base plan's precision
  std::vector<std::uint8_t> frameworks;         // empty = the base plan's framework
  /// TP communication overlap (parallel.tp_comm_overlap: the framework's
  /// tp_overlap_hidden share of each TP collective hidden behind its GEMMs);
  /// empty = the base plan's. With TP 1 there is nothing to overlap: "on" is
  /// the same layout as "off" and is pruned as redundant.
  std::vector<bool> tp_overlap;
  /// MoE token dispatchers (moe.dispatcher, `--search +dispatcher`): the
  /// alltoall one and DeepEP's; empty = the base plan's. Without EP there is
  /// no all-to-all: every dispatcher but the first is the same layout and is
  /// pruned as redundant.
  std::vector<spec::MoeDispatcher> dispatcher;
  /// fp8 scaling recipes (fp8.recipe); empty = the base plan's. A recipe
  /// applies only to fp8 layouts: with another precision every recipe but
  /// the first is the same layout and is pruned as redundant.
  std::vector<spec::Fp8Recipe> fp8_recipe;
  /// CPU offload (plan offload.optimizer / offload.params); empty = the base
  /// plan's. `--search offload` tries none, the optimizer, and the optimizer
  /// with the parameters (searchable_offloads). A layout whose ZeRO stage or
  /// framework cannot offload is refused by engine::check_plan (counts.plan).
  std::vector<spec::OffloadSpec> offload;
  /// Block recomputation (Megatron-LM --recompute-method block
  /// --recompute-num-layers K, spelt block:K): besides every layer, full
  /// recomputation also tries K = quarters x L / 4 (integer division) of
  /// each stage's L = layers / PP, for each number of quarters here;
  /// empty = none. `--search recompute_layers` tries 1, 2 and 3 quarters
  /// (searchable_block_quarters). A K below 1, not below L, or equal to a K
  /// already tried at that PP is pruned as redundant; a framework without
  /// block recomputation is refused by engine::check_plan (counts.plan).
  std::vector<int> block_quarters;
  /// Uneven pipeline stages (Megatron-LM --decoder-first-pipeline-num-layers
  /// / --decoder-last-pipeline-num-layers): each which end stages are
  /// lighter than an even share (StageTrim); empty = the base plan's
  /// parallel.first_stage_layers and last_stage_layers. `--search stages`
  /// tries even stages, the last stage, both ends and the first stage
  /// lighter (searchable_stage_trims), each by the least number of layers
  /// with which the other stages share the rest evenly at that PP. At PP 1
  /// a trim is the even layout again (redundant); a trim no such number
  /// serves (spec::check_stage_layers) is left out as one that does not
  /// divide (counts.shape).
  std::vector<StageTrim> stages;
  double headroom = kDefaultHeadroom;           // fraction of capacity left free
};

/// The precisions `--search precision` tries on `hw` for `base`: bf16, and
/// fp8 where the GPU has fp8 tensor cores and the plan is not QLoRA (its NF4
/// base is dequantized to bf16 for every GEMM).
std::vector<spec::Precision> searchable_precisions(const spec::HardwareSpec& hw, const spec::PlanSpec& base);

/// The offloads `--search offload` tries: none; the optimizer on the CPU
/// (ZeRO-Offload); the optimizer and the parameters (ZeRO-Infinity).
std::vector<spec::OffloadSpec> searchable_offloads();

/// The block recomputation `--search recompute_layers` tries, in quarters of
/// a stage's layers: 1, 2, 3 (K = L/4, L/2, 3L/4).
std::vector<int> searchable_block_quarters();

/// The stage splits `--search stages` tries: even; the last stage lighter;
/// both end stages lighter; the first lighter (the embedding and the LM head
/// make the end stages the heavier ones), each by the least number of layers
/// that leaves the other stages an even share (Megatron-LM's
/// --decoder-first/last-pipeline-num-layers).
std::vector<StageTrim> searchable_stage_trims();

/// The fp8 recipes `--search fp8_recipe` tries on `hw`: each that
/// engine::check_plan accepts for an fp8 plan on it (mxfp8 needs Blackwell).
std::vector<spec::Fp8Recipe> searchable_fp8_recipes(const spec::ModelSpec& m, const spec::HardwareSpec& hw,
                                                    const spec::PlanSpec& base);

struct Layout;
struct AxisValues;  // the value lists of one search, one per axis (search.cpp)

/// A searched dimension, declared once in the axis table (axes()): the plan
/// field it varies, whether a search varies it unless told otherwise, and
/// its effect: the values it takes for a model, GPU, GPU count and base plan,
/// how a value sets a layout, and which of its values are the same layout as
/// another. Its scope (the stage that reads it) is its plan field's
/// (spec::PlanField::scope): run() enumerates a layout as one value index per
/// axis with a mixed-radix counter whose digits are grouped by scope (the
/// micro-batch graph's outermost, then the stage split's, then the step's),
/// and keeps one memo per level (ScopeMemos). `--search`, `--fix` and the
/// search header read the same table.
struct Axis {
  Dim dim;
  std::string_view name;      // its --search and --fix name ("tp", "mb", "fp8_recipe")
  std::string_view key;       // the plan field (YAML key); its flag or --fix fixes the axis
  std::string_view also_key;  // a second plan field of the same axis ("": none); either fixes it
  bool by_default = false;    // searched unless --search leaves it out
  /// dp: a layout's value follows from the GPU count and the other
  /// degrees; searched whenever not given, never a digit of its own.
  bool follows = false;
  /// The header lists the plan's value when the axis is neither searched
  /// nor given; false: it says nothing, and SearchSpec's default for the
  /// axis stands (the plan's setting, or the axis's own rule).
  bool shown_pinned = true;
  /// Whether the axis means anything for a model (EP: a mixture of
  /// experts); nullptr: every model. Where false it is neither searched nor
  /// shown unless given.
  bool (*applies)(const spec::ModelSpec&) = nullptr;
  /// Asks `s` to search the axis's values on this GPU for this base plan.
  void (*search)(SearchSpec& s, const spec::ModelSpec& m, const spec::HardwareSpec& hw,
                 const spec::PlanSpec& base) = nullptr;
  /// Pins `s` to the base plan's value; returns the value as the header
  /// shows it. nullptr: the axis is pinned by another (recompute_layers by recompute).
  std::string (*pin)(SearchSpec& s, const spec::PlanSpec& base) = nullptr;
  /// The values a search enumerates for `s` (its GPU count, fixed and
  /// searched lists), the model and the base plan. nullptr: no digit of
  /// its own (dp; recompute_layers adds values to recompute's).
  void (*values)(AxisValues& v, const SearchSpec& s, const spec::ModelSpec& m, const spec::PlanSpec& base) = nullptr;
  std::size_t (*count)(const AxisValues& v) = nullptr;
  /// Sets value i into the layout (applied in table order).
  void (*apply)(Layout& l, const AxisValues& v, std::size_t i) = nullptr;
  /// Whether value i makes the layout the same as one enumerated at another
  /// value (pruned as redundant); nullptr: never.
  bool (*redundant)(const Layout& l, const AxisValues& v, std::size_t i) = nullptr;
};

/// The axis table, in enumeration order (the first digit varies slowest).
std::span<const Axis> axes();
const Axis& axis(Dim d);
/// The scope of an axis: its plan field's.
spec::Scope scope_of(const Axis& a);

/// A mixed-radix counter over a list of digit radices (Timeloop's
/// CartesianCounter): a point of a cartesian product is an array of digits,
/// the first varying slowest; index() and set() convert to and from its
/// place in the product. A radix of 1 is a dimension with one value: it
/// changes no index.
class MixedRadix {
 public:
  static constexpr std::size_t kMaxDigits = 24;
  void push(std::size_t radix) { radix_[size_++] = radix; }
  std::size_t size() const { return size_; }
  std::size_t radix(std::size_t d) const { return radix_[d]; }
  /// The product of the radices (the number of points).
  std::size_t count() const {
    std::size_t n = 1;
    for (std::size_t d = 0; d < size_; ++d) n *= radix_[d];
    return n;
  }
  /// The digits of point `index` into `digits[0 .. size())`.
  void set(std::size_t index, std::size_t* digits) const {
    for (std::size_t d = size_; d-- > 0;) {
      digits[d] = index % radix_[d];
      index /= radix_[d];
    }
  }
  /// Advances `digits` to the next point, the last digit fastest; returns
  /// the first digit that changed (the ones after it changed too), or size()
  /// past the last point, where every digit is back at 0.
  std::size_t next(std::size_t* digits) const {
    for (std::size_t d = size_; d-- > 0;) {
      if (++digits[d] < radix_[d]) return d;
      digits[d] = 0;
    }
    return size_;
  }
  /// The place of `digits` in the product.
  std::size_t index(const std::size_t* digits) const {
    std::size_t i = 0;
    for (std::size_t d = 0; d < size_; ++d) i = i * radix_[d] + digits[d];
    return i;
  }

 private:
  std::size_t radix_[kMaxDigits] = {};
  std::size_t size_ = 0;
};

struct Layout {
  int tp = 1, pp = 1, dp = 1, cp = 1, ep = 1, micro_batch = 1, vpp = 1, zero = 0;
  bool sp = false;
  spec::Recompute recompute;
  spec::Precision precision = spec::Precision::kBf16;
  std::uint8_t framework = 0;  // index into spec::frameworks()
  bool tp_overlap = false;     // parallel.tp_comm_overlap
  spec::Fp8Recipe fp8_recipe = spec::Fp8Recipe::kDelayed;  // fp8.recipe (read only by fp8 layouts)
  spec::OffloadSpec offload;   // offload.optimizer, offload.params
  /// parallel.first_stage_layers, last_stage_layers; 0 = an even share.
  int first_stage_layers = 0, last_stage_layers = 0;
  spec::MoeDispatcher dispatcher = spec::MoeDispatcher::kAllToAll;  // moe.dispatcher (read only under EP)
};

struct Candidate {
  Layout layout;
  double step_time_s = 0, mfu = 0, hfu = 0, memory_bytes = 0, tokens_per_s = 0;
  double memory_hi_bytes = 0;  // the upper end of its peak-memory interval
  double bubble_fraction = 0, exposed_comm_s = 0;
  double all_to_all_s = 0;  // per step: the MoE all-to-alls' time, hidden or not (engine::StepResult)
  /// The goodput-adjusted run (engine::TrainingTotals); when it never
  /// completes (failures outpace recovery) days, GPU-hours and cost are 0.
  double days = 0, gpu_hours = 0, cost_usd = 0, tokens = 0;
  bool completes = true;
  double score = 0;  // lower is better
  uncertainty::RunTraits traits;  // what its prediction interval is drawn from (uncertainty::traits_of)
  /// The other layouts of an exact tie (same score, step time and peak
  /// memory), in rank order; empty for a row of one layout.
  std::vector<Layout> equivalent;
  /// Filled by the CLI: the `ridgeline predict` command line that reproduces it.
  std::string predict_command;
};

/// Every enumerated layout lands in exactly one count:
///   enumerated = shape + batch + redundant + plan + state + evaluated,
///   evaluated = qualifying + over_memory.
struct SearchCounts {
  std::uint64_t enumerated = 0;  // the whole cross product
  std::uint64_t pruned = 0;      // shape + batch + redundant + plan + state
  std::uint64_t evaluated = 0;   // run through the engine
  std::uint64_t infeasible = 0;  // evaluated and did not qualify (= over_memory)
  std::uint64_t graphs = 0;      // distinct micro-batch graphs built
  std::uint64_t shape = 0;       // TP x PP x CP does not divide the GPUs, or TP/PP/CP/EP the heads, layers, sequence, experts
  std::uint64_t batch = 0;       // the global batch is not a multiple of micro-batch x DP
  std::uint64_t redundant = 0;   // ZeRO with nothing to shard, interleaving without whole chunks
  std::uint64_t plan = 0;        // engine::check_plan rejects the plan (KV heads, FFN size, fp8, framework)
  std::uint64_t state = 0;       // model state alone (weights, gradients, optimizer) above capacity
  std::uint64_t over_memory = 0; // peak memory's upper end above capacity x (1 - headroom)
};

struct SearchResult {
  SearchCounts counts;
  std::vector<Candidate> top;  // best first (ranks_before), one per row; ties in Candidate::equivalent
  double seconds = 0;
  int threads = 1;
  /// The step time of every qualifying configuration evaluated, in no
  /// particular order (counts.evaluated - counts.infeasible of them when
  /// `feasible_times_kept`; a merged part read from JSON without them clears it).
  std::vector<double> feasible_step_times_s;
  bool feasible_times_kept = true;
  /// The first plan check that rejected a layout (counts.plan), for the
  /// "nothing qualifies" message; empty when none did.
  engine::Problem first_problem;
  /// When model state pruned layouts: the fewest GPUs whose ZeRO-3 shards
  /// of the model state fit (0 when not computed or more than 2^20).
  int state_min_gpus = 0;
};

/// Fixed values that can never be valid are errors (field, message); "" when fine.
engine::Problem check_fixed(const SearchSpec& s, const spec::ModelSpec& m, const spec::PlanSpec& base);

/// A memo keyed by a point of some axes (its index in their MixedRadix):
/// each entry formed at first use; reset() forgets what was formed and keeps
/// the storage, so once grown it allocates nothing.
template <class T>
class LevelMemo {
 public:
  /// Room for `n` keys, none formed.
  void reset(std::size_t n) {
    if (values_.size() < n) values_.resize(n);
    formed_.assign(n, 0);
  }
  /// The entry at `key`, formed by form(entry) the first time.
  template <class Form>
  T& get(std::size_t key, Form&& form) {
    if (!formed_[key]) {
      form(values_[key]);
      formed_[key] = 1;
    }
    return values_[key];
  }

 private:
  std::vector<T> values_;
  std::vector<std::uint8_t> formed_;
};

/// A search worker's memos, one per scope level of the axes
/// (spec::Scope), each keyed by the value indices of the axes it reads:
///   - the stage split's level, per search: each stage's parameters
///     (techniques::stage_params) by TP, EP and the stage split (PP and
///     uneven stages), which is all they read of a layout;
///   - the stage split's level, per work item (the micro-batch shapes that
///     differ only in recomputation): the micro-batch graph's base
///     (techniques::build_microbatch_base) by the split;
///   - the step's level, per work item: the step kernels
///     (engine::StepKernels) by the split and every step axis (virtual
///     stages, ZeRO, offload); the stages' model state
///     (memory::stage_states) and its total, the model-state bound, by the
///     split and the step axes but the virtual stages, which they do not read.
struct ScopeMemos {
  LevelMemo<techniques::StageParams> stage_params;
  LevelMemo<graph::Graph> graph_bases;
  LevelMemo<engine::StepKernels> steps;
  LevelMemo<memory::StageStates> states;
  LevelMemo<double> state_bounds;
};

/// What a search's workers keep from one search to the next, one entry per
/// worker thread: the scope-level memos, the kept step times and the cost
/// memo with its shape and collective cache (their buffers grow once, so a
/// second search allocates nothing per layout). Owned by the caller, one
/// per search running at a time; run() without one uses a fresh one.
struct Workspace {
  struct Worker {
    ScopeMemos memos;
    std::vector<double> kept_times;
    engine::CostMemo memo;
  };
  std::vector<Worker> workers;
};

SearchResult run(const SearchSpec& s, const spec::ModelSpec& m, const spec::PlanSpec& base,
                 const spec::HardwareSpec& hw, bool use_calibration = true, Workspace* workspace = nullptr);

/// The ranking: a strict total order on candidates of distinct layouts, used
/// by every top-K and merge, so the best K of a set are the same however the
/// set was split between threads or shards, and `top` K are the first K of
/// any longer list. In order:
///   1. lower score, compared exactly (a tolerance is not transitive, and
///      each layout's score is computed the same way on any thread);
///   2. less memory per GPU;
///   3. the layout key: tp, pp, cp, dp, ep, micro_batch, vpp, zero, sp,
///      recompute (kind, every_k, block_layers), precision, framework, tp_overlap, fp8_recipe,
///      offload (optimizer, params), first_stage_layers, last_stage_layers, dispatcher, each
///      ascending (so
///      an exact tie goes to the plainer layout). It holds every field of
///      Layout, so only equal layouts rank equal.
/// Doubles compare in IEEE total order (std::strong_order): NaN ranks last.
bool ranks_before(const Candidate& a, const Candidate& b);

/// Whether two candidates are an exact tie: the same score, step time and
/// peak memory, bit for bit (one row of the output).
bool ties(const Candidate& a, const Candidate& b);

/// Merges shard results: counts add; rows (each expanded to its layouts)
/// merge, re-rank by ranks_before and collapse exact ties again; the first
/// `top` rows are kept; feasible step times concatenate.
SearchResult merge(const std::vector<SearchResult>& parts, int top);

/// The plan for a layout (base plan with the layout applied; a framework
/// other than the base's brings its default attention and fusion unless the
/// plan gave them).
spec::PlanSpec plan_for(const spec::PlanSpec& base, const Layout& l, int global_batch);

/// memory::upper_bytes: the search's loop allocates nothing.
inline double memory_upper_bytes(const memory::MemoryResult& m) { return memory::upper_bytes(m); }

/// The fewest GPUs (at most 2^20) on which the model state alone, sharded
/// by ZeRO-3 across them all, fits in capacity x (1 - headroom); 0 when none.
int min_gpus_for_state(const spec::ModelSpec& m, const spec::PlanSpec& base, const spec::HardwareSpec& hw,
                       double headroom);

/// "CP1/CP2 · selective/none": the settings in which a row's equivalent
/// layouts differ, each as the values of the row and its ties joined by "/";
/// "" for a row of one layout.
std::string tie_text(const Candidate& c);

/// "even", "first 15", "last 30", "first 7 last 7": a layout's pipeline
/// stages by the layers of the end stages given.
std::string stages_text(const Layout& l);

/// "no offload", "offload optimizer", "offload params", "offload optimizer+params".
std::string offload_text(const spec::OffloadSpec& o);

std::string to_string(Objective o);

}  // namespace ridgeline::search
