// Configuration search: enumerates TP x PP x DP x CP x micro-batch x virtual
// stages x recomputation x ZeRO stage x precision for a GPU count and global
// batch, prunes what cannot be valid or cannot fit (model state alone above
// capacity), evaluates the rest with the engine (reusing one micro-batch
// graph across the layouts that share it) and keeps the best K.
// Shardable (--shard i/N): shard i evaluates every N-th micro-batch graph.
// Besides the best K, it keeps every feasible configuration's step time (8
// bytes each, in a vector reserved once per worker), so that how many lie
// within the best's prediction interval (search/interval_ranking.hpp) can be
// counted once the best is known.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ridgeline/engine/engine.hpp"
#include "ridgeline/uncertainty/interval.hpp"

namespace ridgeline::search {

enum class Objective : std::uint8_t { kTime, kCost, kMfu };

struct SearchSpec {
  int gpus = 8;
  int global_batch = 0;  // sequences; 0 = the base plan's
  Objective objective = Objective::kTime;
  int top = 10;
  int shard_index = 0, shard_count = 1;
  int threads = 0;  // 0 = hardware concurrency
  // Fixed values (from --fix); -1 / empty = free.
  int tp = -1, pp = -1, dp = -1, cp = -1, micro_batch = -1, vpp = -1, zero = -1;
  std::vector<spec::Recompute> recompute;       // empty = none, selective, full
  std::vector<spec::Precision> precision;       // empty = bf16 (+ fp8 where supported)
};

struct Layout {
  int tp = 1, pp = 1, dp = 1, cp = 1, micro_batch = 1, vpp = 1, zero = 0;
  bool sp = false;
  spec::Recompute recompute;
  spec::Precision precision = spec::Precision::kBf16;
};

struct Candidate {
  Layout layout;
  double step_time_s = 0, mfu = 0, hfu = 0, memory_bytes = 0, tokens_per_s = 0;
  double bubble_fraction = 0, exposed_comm_s = 0;
  double days = 0, gpu_hours = 0, cost_usd = 0;
  double score = 0;  // lower is better
  uncertainty::RunTraits traits;  // what its prediction interval is drawn from (uncertainty::traits_of)
};

struct SearchCounts {
  std::uint64_t enumerated = 0;  // the whole cross product
  std::uint64_t pruned = 0;      // invalid layouts and those whose model state cannot fit
  std::uint64_t evaluated = 0;   // run through the engine
  std::uint64_t infeasible = 0;  // evaluated and did not fit
  std::uint64_t graphs = 0;      // distinct micro-batch graphs built
};

struct SearchResult {
  SearchCounts counts;
  std::vector<Candidate> top;  // best first (ranks_before)
  double seconds = 0;
  int threads = 1;
  /// The step time of every feasible configuration evaluated, in no
  /// particular order (counts.evaluated - counts.infeasible of them when
  /// `feasible_times_kept`; a merged part read from JSON without them clears it).
  std::vector<double> feasible_step_times_s;
  bool feasible_times_kept = true;
};

/// Fixed values that can never be valid are errors (field, message); "" when fine.
engine::Problem check_fixed(const SearchSpec& s, const spec::ModelSpec& m, const spec::PlanSpec& base);

SearchResult run(const SearchSpec& s, const spec::ModelSpec& m, const spec::PlanSpec& base,
                 const spec::HardwareSpec& hw, bool use_calibration = true);

/// The ranking: a strict total order on candidates of distinct layouts, used
/// by every top-K and merge, so the best K of a set are the same however the
/// set was split between threads or shards, and `top` K are the first K of
/// any longer list. In order:
///   1. lower score, compared exactly (a tolerance is not transitive, and
///      each layout's score is computed the same way on any thread);
///   2. less memory per GPU;
///   3. the layout key: tp, pp, cp, dp, micro_batch, vpp, zero, sp,
///      recompute (kind, every_k), precision, each ascending (so an exact tie
///      goes to the plainer layout). It holds every field of Layout, so only
///      equal layouts rank equal.
/// Doubles compare in IEEE total order (std::strong_order): NaN ranks last.
bool ranks_before(const Candidate& a, const Candidate& b);

/// Merges shard results: counts add, top lists merge and re-rank by
/// ranks_before, feasible step times concatenate.
SearchResult merge(const std::vector<SearchResult>& parts, int top);

/// The plan for a layout (base plan with the layout applied).
spec::PlanSpec plan_for(const spec::PlanSpec& base, const Layout& l, int global_batch);

std::string to_string(Objective o);

}  // namespace ridgeline::search
