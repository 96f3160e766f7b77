// Ranking under uncertainty (search/interval_ranking.hpp). From the definitions:
//   - the best is the fastest configuration that fits, and stands as the best;
//   - a row whose interval [t lo, t hi] meets the best's [t_b lo_b, t_b hi_b]
//     is not distinguishable from it; in particular any row whose point time
//     lies inside the best's interval (its own interval holds its point,
//     lo <= 1 <= hi);
//   - a row whose interval lies wholly above the best's is distinguishable;
//   - a search's "within" count is the number of feasible configurations
//     with t <= t_b hi_b, which an independent enumeration (every layout
//     through engine::evaluate) must reproduce;
//   - a higher level widens every interval (hi grows with z), so the count
//     never falls as the level rises.
// Where a test needs intervals of a known width it draws them from a
// synthetic residual set (below), so that regenerating
// validation/residuals.json does not change what it checks.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ridgeline/search/interval_ranking.hpp"
#include "test_support.hpp"

using namespace ridgeline;

namespace {

uncertainty::Interval interval(double lo, double hi) {
  uncertainty::Interval iv;
  iv.level = 0.8;
  iv.lo = lo;
  iv.hi = hi;
  iv.rows = 30;
  iv.pool = "synthetic";
  return iv;
}

/// 30 Ampere training runs from three sources, each source's residuals
/// +-0.05 five times over. A run on any other generation has no pool of its
/// own and falls back to "all end-to-end runs", all 30 rows:
///   mu = 0 (every source's mean is 0), s_b = 0,
///   s_w^2 = 30 x 0.05^2 / (30 - 3)   (pooled within-source variance, 27 degrees of freedom),
/// so its interval at level l is exp(-+ z_{(1+l)/2} s_w).
uncertainty::IntervalModel synthetic() {
  std::vector<uncertainty::Residual> rows;
  for (const char* group : {"a", "b", "c"})
    for (int i = 0; i < 10; ++i) {
      uncertainty::Residual r;
      r.id = fmt::format("{}{}", group, i);
      r.group = group;
      r.run.generation = spec::Generation::kAmpere;
      r.run.params = 1e9;
      r.log_residual = i % 2 ? 0.05 : -0.05;
      rows.push_back(r);
    }
  return uncertainty::IntervalModel(std::move(rows), "synthetic");
}

double synthetic_half_width(double level) {
  return uncertainty::normal_quantile(0.5 + level / 2) * std::sqrt(30 * 0.05 * 0.05 / 27);
}

/// Llama-3-8B on eight H100s, sequence 8192, ZeRO-3 (tests/golden/compare_llama3_8b_h100's base plan).
spec::PlanSpec compare_base() {
  spec::PlanSpec p;
  p.seq_len = 8192;
  p.parallel.dp = 8;
  p.parallel.zero = 3;
  p.global_batch = 8;
  return p;
}

}  // namespace

TEST_CASE("interval ranking: overlap and standing follow the definition") {
  const auto best = interval(0.8, 1.25);  // t_b = 1 s: [0.8, 1.25] s
  CHECK(search::standing(1.0, best, 1.0, best) == search::Standing::kIndistinguishable);
  // 1.2 s x [0.8, 1.25] = [0.96, 1.5]: meets [0.8, 1.25].
  CHECK(search::overlaps(1.2, best, 1.0, best));
  CHECK(search::standing(1.2, best, 1.0, best) == search::Standing::kIndistinguishable);
  // 1.6 s x 0.8 = 1.28 > 1.25: wholly above.
  CHECK_FALSE(search::overlaps(1.6, best, 1.0, best));
  CHECK(search::standing(1.6, best, 1.0, best) == search::Standing::kDistinguishable);
  // Exactly touching ends share a point: 1.5625 x 0.8 = 1.25.
  CHECK(search::overlaps(1.5625, best, 1.0, best));
  // A narrow interval of its own can still be told apart: 1.3 s x [0.99, 1.01] lies above 1.25.
  CHECK(search::standing(1.3, interval(0.99, 1.01), 1.0, best) == search::Standing::kDistinguishable);
  // Without an interval (its own or the best's) nothing is told.
  uncertainty::Interval none;
  CHECK(search::standing(1.0, none, 1.0, best) == search::Standing::kUnknown);
  CHECK(search::standing(5.0, best, 1.0, none) == search::Standing::kUnknown);
  CHECK(search::distinguishable(search::Standing::kBest) == 0);
  CHECK(search::distinguishable(search::Standing::kIndistinguishable) == 0);
  CHECK(search::distinguishable(search::Standing::kDistinguishable) == 1);
  CHECK(search::distinguishable(search::Standing::kUnknown) == -1);
  CHECK(search::distinguishable(search::Standing::kDoesNotFit) == -1);
}

TEST_CASE("interval ranking: compare marks the fastest row that fits as best, and the rest against it") {
  const auto hw = test::gpu("h100_sxm");
  const auto m = test::model("llama3_8b");
  std::vector<search::Variation> vars(2);
  REQUIRE(search::parse_variation("recompute=none,selective,full", vars[0]).empty());
  REQUIRE(search::parse_variation("attention=naive,flash2", vars[1]).empty());
  std::string error;
  const auto rows = search::compare(m, compare_base(), hw, vars, true, error);
  REQUIRE(error.empty());
  REQUIRE(rows.size() == 6);
  const auto model = synthetic();
  const double level = 0.8;
  const auto iv = search::compare_intervals(rows, hw, model, level);
  REQUIRE(iv.rows.size() == rows.size());

  // The best, found here by its definition: least step time among the rows that fit.
  int best = -1;
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].pred.status == engine::Status::kOk &&
        (best < 0 || rows[i].pred.step.time_s < rows[best].pred.step.time_s))
      best = static_cast<int>(i);
  REQUIRE(best >= 0);
  CHECK(iv.best == best);
  CHECK(iv.rows[best].standing == search::Standing::kBest);
  CHECK(search::distinguishable(iv.rows[best].standing) == 0);

  // Every row falls back to the 30 synthetic rows: exp(-+ z s_w) (see synthetic()).
  const double half = synthetic_half_width(level);
  const double lo = std::exp(-half), hi = std::exp(half);
  const double t_b = rows[best].pred.step.time_s;
  int inside = 0, above = 0, unfit = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    CAPTURE(i);
    const auto& x = iv.rows[i];
    REQUIRE(x.time.valid());
    CHECK(x.time.lo == doctest::Approx(lo).epsilon(1e-12));
    CHECK(x.time.hi == doctest::Approx(hi).epsilon(1e-12));
    if (static_cast<int>(i) == best) continue;
    const double t = rows[i].pred.step.time_s;
    if (rows[i].pred.status != engine::Status::kOk) {
      CHECK(x.standing == search::Standing::kDoesNotFit);  // never the best, even when faster
      ++unfit;
    } else if (t <= t_b * hi) {  // its point inside the best's interval
      CHECK(x.standing == search::Standing::kIndistinguishable);
      ++inside;
    } else if (t * lo > t_b * hi) {  // its interval wholly above
      CHECK(x.standing == search::Standing::kDistinguishable);
      ++above;
    }
  }
  // The set exercises both sides: naive attention at 8192 tokens is far slower
  // than FlashAttention-2 (the S^2 score matrix through HBM).
  CHECK(above >= 1);
  MESSAGE("compare: ", inside, " rows inside the best's interval, ", above, " wholly above, ", unfit, " do not fit");
}

TEST_CASE("interval ranking: a row whose point time lies inside the best's interval is not distinguishable") {
  // CUDA graphs change only the host's dispatch time: a step that is not
  // host-bound keeps (nearly) its time, inside any interval about the best.
  const auto hw = test::gpu("h100_sxm");
  const auto m = test::model("llama3_8b");
  std::vector<search::Variation> vars(1);
  REQUIRE(search::parse_variation("cuda_graphs=false,true", vars[0]).empty());
  std::string error;
  auto base = compare_base();
  base.attention = spec::AttentionKind::kFlash2;
  const auto rows = search::compare(m, base, hw, vars, true, error);
  REQUIRE(error.empty());
  REQUIRE(rows.size() == 2);
  REQUIRE(rows[0].pred.status == engine::Status::kOk);
  REQUIRE(rows[1].pred.status == engine::Status::kOk);
  for (const auto* model : {&uncertainty::shipped(), static_cast<const uncertainty::IntervalModel*>(nullptr)}) {
    const auto synth = synthetic();
    const auto& im = model ? *model : synth;
    if (im.empty()) continue;  // no shipped residuals: the synthetic set still runs
    const auto iv = search::compare_intervals(rows, hw, im, 0.8);
    REQUIRE(iv.best >= 0);
    const int other = 1 - iv.best;
    const auto& b = iv.rows[iv.best].time;
    REQUIRE(b.valid());
    const double t_b = rows[iv.best].pred.step.time_s, t = rows[other].pred.step.time_s;
    REQUIRE(t <= b.time_hi(t_b));  // the premise: inside the best's interval
    CHECK(iv.rows[other].standing == search::Standing::kIndistinguishable);
  }
}

TEST_CASE("interval ranking: with no row that fits there is no best") {
  const auto hw = test::gpu("h100_sxm");
  const auto m = test::model("llama3_8b");
  spec::PlanSpec base;  // one GPU, AdamW: 16 bytes per parameter of model state > 80 GiB
  base.seq_len = 8192;
  base.global_batch = 1;
  std::vector<search::Variation> vars(1);
  REQUIRE(search::parse_variation("recompute=none,full", vars[0]).empty());
  std::string error;
  const auto rows = search::compare(m, base, hw, vars, true, error);
  REQUIRE(error.empty());
  const auto iv = search::compare_intervals(rows, hw, synthetic(), 0.8);
  CHECK(iv.best == -1);
  for (const auto& x : iv.rows) CHECK(x.standing == search::Standing::kDoesNotFit);
}

namespace {

/// GPT-3 1.3B on 8 H100s, batch 32: a search small enough to enumerate again by hand.
struct SmallSearch {
  spec::HardwareSpec hw = test::gpu("h100_sxm");
  spec::ModelSpec m = test::model("gpt3_1.3b");
  spec::PlanSpec base;
  search::SearchSpec s;
  SmallSearch() {
    base.seq_len = 2048;
    base.global_batch = 32;
    s.gpus = 8;
    s.global_batch = 32;
    s.top = 5;
    s.threads = 2;
    s.recompute = {{spec::RecomputeKind::kNone, 0}, {spec::RecomputeKind::kFull, 0}};
    s.precision = {spec::Precision::kBf16};
  }
};

/// Every feasible configuration of the small search, found without search::run:
/// each layout of the same value lists through engine::evaluate. Left out, as
/// the search leaves them out: ZeRO > 0 with nothing to shard (the same as
/// ZeRO-0), interleaving without whole chunks, plans engine::check_plan
/// rejects, and those whose peak memory's upper end leaves less than the
/// default headroom (search::kDefaultHeadroom).
std::vector<engine::Prediction> enumerate(const SmallSearch& x) {
  std::vector<engine::Prediction> out;
  const auto& m = x.m;
  engine::EvalOptions opt;
  opt.keep_kernels = false;
  for (int tp : {1, 2, 4, 8, 16, 32})
    for (int pp = 1; pp <= x.s.gpus; ++pp)
      for (int cp : {1, 2, 4, 8})
        for (int mb : {1, 2, 4, 8, 16})
          for (int vpp : {1, 2, 4})
            for (int zero : {0, 1, 2, 3})
              for (const auto& rec : x.s.recompute) {
                if (m.layers % pp != 0 || x.s.gpus % (tp * pp * cp) != 0) continue;
                search::Layout l;
                l.tp = tp;
                l.pp = pp;
                l.cp = cp;
                l.dp = x.s.gpus / (tp * pp * cp);
                l.micro_batch = mb;
                l.vpp = vpp;
                l.zero = zero;
                l.sp = tp > 1;
                l.recompute = rec;
                l.precision = spec::Precision::kBf16;
                if (x.s.global_batch % (mb * l.dp) != 0) continue;
                if (zero > 0 && l.dp * cp == 1) continue;
                if (vpp > 1 && (pp == 1 || m.layers % (pp * vpp) != 0)) continue;
                if (m.heads % tp != 0 || 2048 % cp != 0 || (cp > 1 && 2048 / cp < 128)) continue;
                const auto p = search::plan_for(x.base, l, x.s.global_batch);
                if (!engine::check_plan(m, p, x.hw).field.empty()) continue;
                auto pred = engine::evaluate(m, p, x.hw, opt);
                // Qualifies: fits, with peak memory's upper end inside the default headroom.
                if (pred.status == engine::Status::kOk &&
                    uncertainty::memory_interval(pred.memory).hi <= x.hw.memory_bytes * (1 - search::kDefaultHeadroom))
                  out.push_back(std::move(pred));
              }
  return out;
}

}  // namespace

TEST_CASE("interval ranking: the search's count within the best's interval is a brute-force count") {
  const SmallSearch x;
  const auto r = search::run(x.s, x.m, x.base, x.hw);
  REQUIRE(!r.top.empty());
  const auto all = enumerate(x);
  REQUIRE(all.size() == r.counts.evaluated - r.counts.infeasible);
  REQUIRE(r.feasible_step_times_s.size() == all.size());

  // The best, by hand: the least step time (objective time).
  const auto fastest = std::min_element(all.begin(), all.end(), [](const auto& a, const auto& b) {
    return a.step.time_s < b.step.time_s;
  });
  CHECK(r.top.front().step_time_s == doctest::Approx(fastest->step.time_s).epsilon(1e-12));

  // A candidate's traits are those of its own prediction.
  for (const auto& c : r.top) {
    const auto pred = engine::evaluate(x.m, search::plan_for(x.base, c.layout, x.s.global_batch), x.hw);
    const auto t = uncertainty::traits_of(pred, search::plan_for(x.base, c.layout, x.s.global_batch), x.hw);
    CHECK(c.traits.framework == t.framework);
    CHECK(c.traits.generation == t.generation);
    CHECK(c.traits.gpus == t.gpus);
    CHECK(c.traits.params == t.params);
    CHECK(c.traits.dominant == t.dominant);
  }

  const auto model = synthetic();
  std::uint64_t previous = 0;
  for (double level : {0.5, 0.8, 0.9, 0.95, 0.99}) {
    CAPTURE(level);
    const auto iv = search::search_intervals(r, model, level);
    REQUIRE(iv.within.known);
    CHECK(iv.within.of == all.size());
    const double limit = fastest->step.time_s * std::exp(synthetic_half_width(level));
    const auto brute = static_cast<std::uint64_t>(
        std::count_if(all.begin(), all.end(), [&](const auto& p) { return p.step.time_s <= limit; }));
    CHECK(iv.within.count == brute);
    CHECK(iv.within.count >= 1);        // the best itself
    CHECK(iv.within.count >= previous);  // wider at a higher level
    previous = iv.within.count;
    REQUIRE(iv.top.size() == r.top.size());
    CHECK(iv.top.front().standing == search::Standing::kBest);
    // Every top row inside the best's interval is not distinguishable from it.
    for (size_t i = 1; i < r.top.size(); ++i)
      if (r.top[i].step_time_s <= iv.within.time_hi_s) CHECK(iv.top[i].standing == search::Standing::kIndistinguishable);
  }
  // With the shipped residuals (when present): the count never falls as the level rises.
  if (!uncertainty::shipped().empty()) {
    std::uint64_t prev = 0;
    for (double level : {0.5, 0.8, 0.9, 0.99}) {
      const auto iv = search::search_intervals(r, uncertainty::shipped(), level);
      REQUIRE(iv.within.known);
      CHECK(iv.within.count >= prev);
      prev = iv.within.count;
    }
  }
}

TEST_CASE("interval ranking: a search's best with no interval counts nothing and says why") {
  const SmallSearch x;
  const auto r = search::run(x.s, x.m, x.base, x.hw);
  const auto iv = search::search_intervals(r, uncertainty::IntervalModel(), 0.8);
  CHECK_FALSE(iv.within.known);
  CHECK(iv.top.front().standing == search::Standing::kBest);
  for (size_t i = 1; i < iv.top.size(); ++i) CHECK(iv.top[i].standing == search::Standing::kUnknown);
}

TEST_CASE("interval ranking: search --interval-level reports the count, and shards merge to the same count") {
  const std::string q = "search --gpu h100_sxm --model gpt3_1.3b --gpus 8 --global-batch 32 --seq 2048 "
                        "--fix recompute=none --fix precision=bf16 --top 3 --threads 1";
  const auto whole = test::run_cli(q + " --format json");
  REQUIRE(whole.status == 0);
  const auto j = nlohmann::json::parse(whole.out);
  const auto& w = j["within_best_interval"];
  CHECK(w["level"] == 0.8);
  CHECK(w["of"] == j["counts"]["evaluated"].get<std::uint64_t>() - j["counts"]["infeasible"].get<std::uint64_t>());
  REQUIRE(j["top"].size() == 3);
  CHECK(j["top"][0]["best"] == true);
  CHECK(j["top"][0]["distinguishable_from_best"] == false);
  CHECK_FALSE(j.contains("feasible_step_times_s"));  // only a shard carries them
  if (uncertainty::shipped().empty()) {
    CHECK(w["count"].is_null());
    return;
  }
  REQUIRE(w["count"].is_number());
  CHECK(w["count"].get<std::uint64_t>() >= 1);
  for (const auto& row : j["top"]) {
    CHECK(row["step_time_s_interval"].is_array());
    CHECK(row["tokens_per_s_interval"].is_array());
    CHECK(row["distinguishable_from_best"].is_boolean());
  }
  const auto at = [&](const char* level) {
    const auto r = test::run_cli(q + " --format json --interval-level " + level);
    REQUIRE(r.status == 0);
    return nlohmann::json::parse(r.out)["within_best_interval"]["count"].get<std::uint64_t>();
  };
  CHECK(at("0.5") <= w["count"].get<std::uint64_t>());
  CHECK(w["count"].get<std::uint64_t>() <= at("0.95"));

  // Two shards, written as files and merged, count the same configurations.
  std::string files;
  for (int i = 0; i < 2; ++i) {
    const std::string f = fmt::format("/tmp/ridgeline_interval_shard_{}_{}.json", ::getpid(), i);
    REQUIRE(test::run_cli(q + fmt::format(" --shard {}/2 --output {}", i, f)).status <= 1);
    files += " " + f;
  }
  const auto merged = test::run_cli("search --top 3 --format json --merge" + files);
  for (int i = 0; i < 2; ++i)
    std::filesystem::remove(fmt::format("/tmp/ridgeline_interval_shard_{}_{}.json", ::getpid(), i));
  REQUIRE(merged.status == 0);
  const auto mj = nlohmann::json::parse(merged.out);
  CHECK(mj["within_best_interval"]["count"] == w["count"]);
  CHECK(mj["within_best_interval"]["of"] == w["of"]);
  CHECK(mj["top"][0]["step_time_s"] == j["top"][0]["step_time_s"]);

  const auto table = test::run_cli(q);
  REQUIRE(table.status == 0);
  CHECK(table.out.find(fmt::format("{} of {} feasible configurations lie within the best's 80% interval",
                                   w["count"].get<std::uint64_t>(), w["of"].get<std::uint64_t>())) != std::string::npos);
  CHECK(table.out.find("vs best") != std::string::npos);
}

TEST_CASE("interval ranking: compare JSON names the best and marks each row") {
  const auto r = test::run_cli(
      "compare --seq 8192 --dp 8 --zero 3 --global-batch 8 --vary attention=naive,flash2 --vary cuda_graphs=false,true "
      "--format json");
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["interval_level"] == 0.8);
  REQUIRE(j["best_row"].is_number_integer());
  const auto& rows = j["rows"];
  const int best = j["best_row"];
  CHECK(rows[best]["best"] == true);
  CHECK(rows[best]["standing"] == "best");
  CHECK(rows[best]["distinguishable_from_best"] == false);
  int bests = 0;
  for (const auto& row : rows) {
    bests += row["best"].get<bool>();
    if (!row["fits"].get<bool>()) CHECK(row["distinguishable_from_best"].is_null());
    if (uncertainty::shipped().empty()) continue;
    REQUIRE(row["step_time_s_interval"].is_array());
    const double lo = row["step_time_s_interval"][0], hi = row["step_time_s_interval"][1];
    CHECK(lo <= row["step_time_s"].get<double>());
    CHECK(row["step_time_s"].get<double>() <= hi);
  }
  CHECK(bests == 1);
  // --wide: the interval column too (the default table leaves it out to keep to 120 columns).
  const auto table =
      test::run_cli("compare --seq 8192 --dp 8 --zero 3 --global-batch 8 --vary attention=naive,flash2 --wide");
  REQUIRE(table.status == 0);
  CHECK(table.out.find("best: the fastest configuration that fits") != std::string::npos);
  CHECK(table.out.find("80% step time") != std::string::npos);
}

TEST_CASE("interval ranking: --interval-level outside 0.5..0.99 is one line naming the flag, exit 2") {
  for (const char* cmd : {"compare --vary recompute=none,full", "search --gpus 8 --global-batch 8"}) {
    CAPTURE(cmd);
    const auto r = test::run_cli(std::string(cmd) + " --interval-level 0.3");
    CHECK(r.status == 2);
    CHECK(r.err == "error: --interval-level: expected a level from 0.5 to 0.99 (0.8 = an 80% interval), got 0.3\n");
    CHECK(r.out.empty());
  }
}
