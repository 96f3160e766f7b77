#include "ridgeline/search/search.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <compare>
#include <fmt/format.h>
#include <thread>
#include <tuple>

#include "ridgeline/memory/memory.hpp"

namespace ridgeline::search {

namespace {

std::vector<int> values_or(int fixed, std::vector<int> all) {
  if (fixed > 0 || (fixed == 0 && !all.empty() && all.front() == 0)) return {fixed};
  return all;
}

struct Dims {
  std::vector<int> tp, pp, cp, micro, vpp, zero;
  std::vector<spec::Recompute> rec;
  std::vector<spec::Precision> prec;
};

Dims dims_for(const SearchSpec& s, const spec::ModelSpec& m, const spec::HardwareSpec& hw) {
  Dims d;
  d.tp = values_or(s.tp, {1, 2, 4, 8, 16, 32});
  std::vector<int> pps;
  for (int p = 1; p <= m.layers && p <= s.gpus; ++p)
    if (m.layers % p == 0) pps.push_back(p);
  d.pp = values_or(s.pp, pps);
  d.cp = values_or(s.cp, {1, 2, 4, 8});
  d.micro = values_or(s.micro_batch, {1, 2, 4, 8, 16});
  d.vpp = values_or(s.vpp, {1, 2, 4});
  d.zero = s.zero >= 0 ? std::vector<int>{s.zero} : std::vector<int>{0, 1, 2, 3};
  d.rec = s.recompute.empty() ? std::vector<spec::Recompute>{{spec::RecomputeKind::kNone, 0},
                                                             {spec::RecomputeKind::kSelective, 0},
                                                             {spec::RecomputeKind::kFull, 0}}
                              : s.recompute;
  if (!s.precision.empty()) d.prec = s.precision;
  else {
    d.prec = {spec::Precision::kBf16};
    if (hw.supports(spec::Peak::kFp8)) d.prec.push_back(spec::Precision::kFp8);
  }
  return d;
}

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
  const auto& [tp, pp, dp, cp, micro_batch, vpp, zero, sp, recompute, precision] = l;
  const auto& [recompute_kind, every_k] = recompute;
  return std::tuple(tp, pp, cp, dp, micro_batch, vpp, zero, sp, static_cast<int>(recompute_kind), every_k,
                    static_cast<int>(precision));
}

/// Keeps the best k seen so far in a heap whose front is the worst kept
/// (the one that ranks last); a candidate enters only if it ranks before it.
void keep_top(std::vector<Candidate>& top, const Candidate& c, int k) {
  if (k < 1) return;
  if (static_cast<int>(top.size()) < k) {
    top.push_back(c);
    std::push_heap(top.begin(), top.end(), ranks_before);
    return;
  }
  if (!ranks_before(c, top.front())) return;
  std::pop_heap(top.begin(), top.end(), ranks_before);
  top.back() = c;
  std::push_heap(top.begin(), top.end(), ranks_before);
}

}  // namespace

bool ranks_before(const Candidate& a, const Candidate& b) {
  if (const auto c = std::strong_order(a.score, b.score); c != 0) return c < 0;
  if (const auto c = std::strong_order(a.memory_bytes, b.memory_bytes); c != 0) return c < 0;
  return layout_key(a.layout) < layout_key(b.layout);
}

std::string to_string(Objective o) {
  switch (o) {
    case Objective::kTime: return "time";
    case Objective::kCost: return "cost";
    case Objective::kMfu: return "mfu";
  }
  return "time";
}

spec::PlanSpec plan_for(const spec::PlanSpec& base, const Layout& l, int global_batch) {
  spec::PlanSpec p = base;
  p.parallel.tp = l.tp;
  p.parallel.pp = l.pp;
  p.parallel.dp = l.dp;
  p.parallel.cp = l.cp;
  p.parallel.sp = l.sp;
  p.parallel.zero = l.zero;
  p.parallel.virtual_stages = l.vpp;
  p.micro_batch = l.micro_batch;
  p.recompute = l.recompute;
  p.precision = l.precision;
  if (global_batch > 0) p.global_batch = global_batch;
  return p;
}

engine::Problem check_fixed(const SearchSpec& s, const spec::ModelSpec& m, const spec::PlanSpec& base) {
  const int seq = graph::seq_len(m, base);
  if (s.gpus < 1) return {"--gpus", "expected at least 1 GPU"};
  if (s.tp > 0 && m.heads % s.tp != 0)
    return {"--fix tp", fmt::format("TP {} does not divide {} attention heads", s.tp, m.heads)};
  if (s.pp > 0 && m.layers % s.pp != 0)
    return {"--fix pp", fmt::format("PP {} does not divide {} layers", s.pp, m.layers)};
  if (s.cp > 0 && seq % s.cp != 0)
    return {"--fix cp", fmt::format("CP {} does not divide the sequence length {}", s.cp, seq)};
  const int fixed_product = (s.tp > 0 ? s.tp : 1) * (s.pp > 0 ? s.pp : 1) * (s.cp > 0 ? s.cp : 1) * (s.dp > 0 ? s.dp : 1);
  if (s.gpus % fixed_product != 0 ||
      (s.tp > 0 && s.pp > 0 && s.cp > 0 && s.dp > 0 && fixed_product != s.gpus))
    return {"--fix", fmt::format("TP x PP x CP x DP = {} does not match {} GPUs", fixed_product, s.gpus)};
  const int gb = s.global_batch > 0 ? s.global_batch : base.global_batch;
  if (gb <= 0) return {"--global-batch", "a search needs the global batch (sequences per step)"};
  return {};
}

SearchResult run(const SearchSpec& s, const spec::ModelSpec& m, const spec::PlanSpec& base,
                 const spec::HardwareSpec& hw, bool use_calibration) {
  const auto t0 = std::chrono::steady_clock::now();
  const Dims d = dims_for(s, m, hw);
  engine::EvalOptions ro;
  ro.use_calibration = use_calibration;
  const cost::CostParams c = engine::resolve_for(hw, base, ro);
  const int gb = s.global_batch > 0 ? s.global_batch : base.global_batch;
  const int seq = graph::seq_len(m, base);
  // Outer index: one micro-batch graph (tp, pp, cp, micro, vpp, recompute, precision);
  // inner: the layouts that share it (dp follows from the GPU count; zero stages).
  const size_t outer = d.tp.size() * d.pp.size() * d.cp.size() * d.micro.size() * d.rec.size() * d.prec.size();
  const size_t inner = d.vpp.size() * d.zero.size();
  int threads = s.threads > 0 ? s.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::vector<SearchResult> parts(threads);
  // A worker takes every (shard_count x threads)-th graph: at most this many
  // graphs, `inner` layouts each. Reserving their step times once keeps the
  // per-layout path free of heap allocation (tests/unit/allocation_test.cpp);
  // 8 bytes a layout, a few hundred KiB for the largest searches. Keeping the
  // times (rather than a second pass of the engine once the best is known)
  // costs one store per feasible layout; the count within the best's interval
  // is then one pass over them (search::search_intervals).
  const size_t stride = static_cast<size_t>(s.shard_count) * static_cast<size_t>(threads);
  const size_t times_per_worker = (outer / stride + 1) * inner;
  auto worker = [&](int tid) {
    SearchResult& r = parts[tid];
    r.feasible_step_times_s.reserve(times_per_worker);
    graph::Graph g, sg;
    engine::MicrobatchSummary sum;
    engine::Prediction pred;
    engine::EvalOptions opt;
    opt.keep_kernels = false;
    opt.use_calibration = use_calibration;
    pred.calibrated = c.calibrated;
    for (size_t o = 0; o < outer; ++o) {
      if (static_cast<int>(o % s.shard_count) != s.shard_index) continue;
      if (static_cast<int>((o / s.shard_count) % threads) != tid) continue;
      size_t rem = o;
      auto take = [&rem](size_t n) {
        const size_t i = rem % n;
        rem /= n;
        return i;
      };
      Layout l;
      l.precision = d.prec[take(d.prec.size())];
      l.recompute = d.rec[take(d.rec.size())];
      l.micro_batch = d.micro[take(d.micro.size())];
      l.cp = d.cp[take(d.cp.size())];
      l.pp = d.pp[take(d.pp.size())];
      l.tp = d.tp[take(d.tp.size())];
      l.sp = l.tp > 1;
      r.counts.enumerated += inner;
      const int tpc = l.tp * l.pp * l.cp;
      const bool valid_shape = s.gpus % tpc == 0 && m.heads % l.tp == 0 && m.layers % l.pp == 0 &&
                               seq % l.cp == 0 && (l.cp == 1 || seq / l.cp >= 128);
      l.dp = valid_shape ? s.gpus / tpc : 0;
      if (!valid_shape || (s.dp > 0 && l.dp != s.dp) || gb % (static_cast<long long>(l.micro_batch) * l.dp) != 0) {
        r.counts.pruned += inner;
        continue;
      }
      bool built = false;
      for (size_t z = 0; z < inner; ++z) {
        l.vpp = d.vpp[z / d.zero.size()];
        l.zero = d.zero[z % d.zero.size()];
        if (l.zero > 0 && l.dp * l.cp == 1) {  // nothing to shard: same as ZeRO-0
          ++r.counts.pruned;
          continue;
        }
        if (l.vpp > 1 && (l.pp == 1 || m.layers % (l.pp * l.vpp) != 0)) {  // interleaving needs whole chunks
          ++r.counts.pruned;
          continue;
        }
        const spec::PlanSpec p = plan_for(base, l, gb);
        if (!engine::check_plan(m, p, hw).field.empty() || memory::model_state(m, p).total() > hw.memory_bytes) {
          ++r.counts.pruned;
          continue;
        }
        if (!built) {
          engine::summarize_microbatch(sum, g, m, p, hw, c, nullptr, 1);
          ++r.counts.graphs;
          built = true;
        }
        pred.status = engine::Status::kOk;
        engine::finish(pred, sum, sg, m, p, hw, c, opt);
        ++r.counts.evaluated;
        if (pred.status != engine::Status::kOk) {
          ++r.counts.infeasible;
          continue;
        }
        r.feasible_step_times_s.push_back(pred.step.time_s);
        Candidate cand;
        cand.layout = l;
        cand.step_time_s = pred.step.time_s;
        cand.mfu = pred.step.mfu;
        cand.hfu = pred.step.hfu;
        cand.memory_bytes = pred.memory.total;
        cand.tokens_per_s = pred.step.tokens_per_s;
        cand.bubble_fraction = pred.step.bubble_fraction;
        cand.exposed_comm_s = pred.step.exposed_comm_s;
        cand.days = pred.totals.wall_s / 86400.0;
        cand.gpu_hours = pred.totals.gpu_hours;
        cand.cost_usd = pred.totals.cost_usd;
        cand.score = score(s.objective, pred);
        cand.traits = uncertainty::traits_of(pred, p, hw);
        keep_top(r.top, cand, s.top);
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker, t);
  worker(0);
  for (auto& th : pool) th.join();
  SearchResult out = merge(parts, s.top);
  out.threads = threads;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

SearchResult merge(const std::vector<SearchResult>& parts, int top) {
  SearchResult out;
  size_t times = 0;
  for (const auto& p : parts) times += p.feasible_step_times_s.size();
  out.feasible_step_times_s.reserve(times);
  for (const auto& p : parts) {
    out.counts.enumerated += p.counts.enumerated;
    out.counts.pruned += p.counts.pruned;
    out.counts.evaluated += p.counts.evaluated;
    out.counts.infeasible += p.counts.infeasible;
    out.counts.graphs += p.counts.graphs;
    out.seconds = std::max(out.seconds, p.seconds);
    out.top.insert(out.top.end(), p.top.begin(), p.top.end());
    out.feasible_step_times_s.insert(out.feasible_step_times_s.end(), p.feasible_step_times_s.begin(),
                                     p.feasible_step_times_s.end());
    out.feasible_times_kept = out.feasible_times_kept && p.feasible_times_kept;
  }
  std::sort(out.top.begin(), out.top.end(), ranks_before);
  if (static_cast<int>(out.top.size()) > top) out.top.resize(std::max(0, top));
  return out;
}

}  // namespace ridgeline::search
