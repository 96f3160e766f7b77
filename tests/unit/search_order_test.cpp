// The search's ranking is one strict total order (search::ranks_before):
// score exactly, then memory per GPU, then every field of the layout. Each
// layout is evaluated independently of the thread that evaluates it, so its
// score is the same bits on any thread; with every tie broken, the best K of
// the evaluated set is a function of the set alone. Exact ties (same score,
// step time and memory) are one row, on their plainest layout, listing the
// others. Hence, from the model:
//   - any split of the candidates (threads, shards) merges to the same top K
//     rows, each with the same equivalent layouts;
//   - the top K are the first K of the top K' for K < K';
//   - `search` prints the same answer on 1, 2, 3 or 4 threads.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "ridgeline/search/search.hpp"
#include "test_support.hpp"

using namespace ridgeline;

namespace {

search::Candidate candidate(double score, double memory_bytes, search::Layout l = {}) {
  search::Candidate c;
  c.layout = l;
  c.score = score;
  c.step_time_s = score;
  c.memory_bytes = memory_bytes;
  return c;
}

bool same_layout(const search::Layout& a, const search::Layout& b) {
  return a.tp == b.tp && a.pp == b.pp && a.dp == b.dp && a.cp == b.cp && a.micro_batch == b.micro_batch &&
         a.vpp == b.vpp && a.zero == b.zero && a.sp == b.sp && a.recompute == b.recompute &&
         a.precision == b.precision && a.ep == b.ep && a.framework == b.framework && a.tp_overlap == b.tp_overlap &&
         a.fp8_recipe == b.fp8_recipe;
}

bool same_layouts(const std::vector<search::Layout>& a, const std::vector<search::Layout>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_layout(a[i], b[i])) return false;
  return true;
}

/// The JSON text without its three timing lines (wall seconds, the thread
/// count asked for, and their ratio), which are measurements of the run, not
/// part of the answer. Everything else is compared byte for byte.
std::string without_timing(const std::string& json_text) {
  std::istringstream in(json_text);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.starts_with("  \"seconds\": ") || line.starts_with("  \"threads\": ") ||
        line.starts_with("  \"evaluated_per_s\": "))
      continue;
    out += line + "\n";
  }
  return out;
}

// The README's search example.
const std::string kReadmeSearch =
    "search --gpu a100_sxm_80gb --model gpt3_175b --gpus 1024 --global-batch 1536 --seq 2048 --format json";

}  // namespace

TEST_CASE("search order: ranks_before breaks every tie, exactly") {
  using search::ranks_before;
  const auto a = candidate(1.0, 10);
  CHECK_FALSE(ranks_before(a, a));  // irreflexive
  CHECK(ranks_before(candidate(1.0, 99), candidate(2.0, 1)));  // score first
  CHECK(ranks_before(candidate(1.0, 1), candidate(1.0, 2)));   // then memory

  // Scores a relative 0.6e-9 apart: the old 1e-9 tolerance called neighbours
  // equal but not the ends (not transitive). Exact comparison orders them.
  const double eps = 0.6e-9;
  const auto x = candidate(1.0, 3), y = candidate(1.0 + eps, 2), z = candidate(1.0 + 2 * eps, 1);
  CHECK(ranks_before(x, y));
  CHECK(ranks_before(y, z));
  CHECK(ranks_before(x, z));

  // Same score and memory: each Layout field alone decides.
  search::Layout base;
  std::vector<search::Layout> one_field_more(16, base);
  one_field_more[0].tp = 2;
  one_field_more[1].pp = 2;
  one_field_more[2].dp = 2;
  one_field_more[3].cp = 2;
  one_field_more[4].micro_batch = 2;
  one_field_more[5].vpp = 2;
  one_field_more[6].zero = 1;
  one_field_more[7].sp = true;
  one_field_more[8].recompute = {spec::RecomputeKind::kSelective, 0};
  one_field_more[9].recompute = {spec::RecomputeKind::kNone, 2};
  one_field_more[10].precision = spec::Precision::kFp8;
  one_field_more[11].ep = 2;
  one_field_more[12].framework = 1;
  one_field_more[13].recompute = {spec::RecomputeKind::kFull, 0, 2};
  one_field_more[14].first_stage_layers = 7;
  one_field_more[15].last_stage_layers = 7;
  for (size_t i = 0; i < one_field_more.size(); ++i) {
    CAPTURE(i);
    CHECK(ranks_before(candidate(1.0, 1, base), candidate(1.0, 1, one_field_more[i])));
    CHECK_FALSE(ranks_before(candidate(1.0, 1, one_field_more[i]), candidate(1.0, 1, base)));
  }

  // An exact tie at a fixed GPU count goes to fewer CP ranks (more DP replicas).
  search::Layout dp32, cp2;
  dp32.dp = 32;
  cp2.dp = 16;
  cp2.cp = 2;
  CHECK(ranks_before(candidate(1.0, 1, dp32), candidate(1.0, 1, cp2)));

  // A NaN score ranks after every number (IEEE total order), so sorting stays defined.
  const auto nan = candidate(std::numeric_limits<double>::quiet_NaN(), 1);
  CHECK(ranks_before(candidate(1e300, 1), nan));
  CHECK_FALSE(ranks_before(nan, candidate(1e300, 1)));
}

TEST_CASE("search order: merge keeps the same top K however the candidates are split") {
  // 600 distinct layouts with three scores and two memories: six exact-tie
  // groups of 100 layouts (rows), each row on its first layout by the key.
  std::vector<search::Candidate> all;
  for (int tp : {1, 2, 4, 8, 16})
    for (int pp : {1, 2, 4, 8, 16})
      for (int zero : {0, 1, 2, 3})
        for (auto kind : {spec::RecomputeKind::kNone, spec::RecomputeKind::kSelective, spec::RecomputeKind::kFull})
          for (auto prec : {spec::Precision::kBf16, spec::Precision::kFp8}) {
            search::Layout l;
            l.tp = tp;
            l.pp = pp;
            l.zero = zero;
            l.recompute = {kind, 0};
            l.precision = prec;
            const int i = static_cast<int>(all.size());
            all.push_back(candidate(17.0 + (i % 3), 64.0 + (i % 2), l));
          }
  REQUIRE(all.size() == 600);
  const auto whole = search::merge({search::SearchResult{{}, all}}, 50);
  REQUIRE(whole.top.size() == 6);
  for (size_t i = 1; i < whole.top.size(); ++i) CHECK(search::ranks_before(whole.top[i - 1], whole.top[i]));
  for (const auto& row : whole.top) {
    CHECK(row.equivalent.size() == 99);
    // The row's layout is the group's first; its ties follow in rank order.
    search::Candidate prev = row;
    for (const auto& l : row.equivalent) {
      search::Candidate next = row;
      next.layout = l;
      CHECK(search::ranks_before(prev, next));
      prev = next;
    }
  }

  std::mt19937 rng(7);
  for (int parts : {2, 3, 4, 7}) {
    CAPTURE(parts);
    auto shuffled = all;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    std::vector<search::SearchResult> split(parts);
    for (size_t i = 0; i < shuffled.size(); ++i) split[i % parts].top.push_back(shuffled[i]);
    // Each part keeps its own best 50 rows first, as a thread or a shard does.
    for (auto& p : split) p = search::merge({p}, 50);
    const auto merged = search::merge(split, 50);
    REQUIRE(merged.top.size() == whole.top.size());
    for (size_t i = 0; i < merged.top.size(); ++i) {
      CHECK(same_layout(merged.top[i].layout, whole.top[i].layout));
      CHECK(same_layouts(merged.top[i].equivalent, whole.top[i].equivalent));
    }
  }
  const auto five = search::merge({search::SearchResult{{}, all}}, 5);
  REQUIRE(five.top.size() == 5);
  for (size_t i = 0; i < 5; ++i) CHECK(same_layout(five.top[i].layout, whole.top[i].layout));
}

TEST_CASE("search order: the README's 175B search prints the same JSON on 1, 2, 3 and 4 threads") {
  const auto one = test::run_cli(kReadmeSearch + " --top 5 --threads 1");
  REQUIRE(one.status == 0);
  REQUIRE(nlohmann::json::parse(one.out)["threads"] == 1);
  const std::string expected = without_timing(one.out);
  // Only the three timing lines were dropped.
  REQUIRE(std::count(one.out.begin(), one.out.end(), '\n') - std::count(expected.begin(), expected.end(), '\n') == 3);
  for (int threads : {2, 3, 4}) {
    CAPTURE(threads);
    const auto r = test::run_cli(kReadmeSearch + " --top 5 --threads " + std::to_string(threads));
    REQUIRE(r.status == 0);
    CHECK(nlohmann::json::parse(r.out)["threads"] == threads);
    CHECK(without_timing(r.out) == expected);
  }
}

TEST_CASE("search order: --top 5 gives the first 5 rows of --top 50") {
  const auto five = test::run_cli(kReadmeSearch + " --top 5 --threads 2");
  const auto fifty = test::run_cli(kReadmeSearch + " --top 50 --threads 3");
  REQUIRE(five.status == 0);
  REQUIRE(fifty.status == 0);
  const auto j5 = nlohmann::json::parse(five.out), j50 = nlohmann::json::parse(fifty.out);
  REQUIRE(j5["top"].size() == 5);
  REQUIRE(j50["top"].size() == 50);
  CHECK(j5["counts"] == j50["counts"]);
  for (size_t i = 0; i < 5; ++i) {
    CAPTURE(i);
    CHECK(j5["top"][i] == j50["top"][i]);
  }
}
