#include "ridgeline/report/advice_view.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "ridgeline/graph/graph.hpp"
#include "ridgeline/report/json_number.hpp"
#include "ridgeline/report/markdown.hpp"
#include "ridgeline/report/search_view.hpp"
#include "ridgeline/spec/plan_fields.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::report {

namespace {

using json = nlohmann::json;
using units::format_bytes;
using units::format_percent;
using units::format_seconds;

std::string signed_pct(double g) { return fmt::format("{}{:.1f}%", g >= 0 ? "+" : "", 100 * g); }

std::string gain_range(const advise::Suggestion& s) {
  if (!s.gain_interval_known) return "";
  return signed_pct(s.gain_lo) + " to " + signed_pct(s.gain_hi);
}

/// "yes"; "tight" when only the point estimate fits (not the memory interval's upper end with the headroom); "no".
std::string fits_word(const advise::Outcome& o) { return o.fits_headroom ? "yes" : o.fits ? "tight" : "no"; }

/// The largest parts of a loss: "norm 0.21 s, elementwise 0.18 s" (at most three).
std::string parts_text(const advise::Loss& l) {
  std::string o;
  for (size_t i = 0; i < l.parts.size() && i < 3; ++i) {
    if (l.parts[i].seconds <= 0) continue;
    o += fmt::format("{}{} {}", o.empty() ? "" : ", ", l.parts[i].name, format_seconds(l.parts[i].seconds));
  }
  return o;
}

json outcome_json(const advise::Outcome& o, double level) {
  json j = {{"step_time_s", json_number(o.step_s)},          {"tokens_per_s", json_number(o.tokens_per_s)},
            {"mfu", json_number(o.mfu)},                     {"peak_memory_bytes", std::llround(o.peak_bytes)},
            {"fits", o.fits},                        {"fits_with_headroom", o.fits_headroom},
            {"status", std::string(engine::name(o.status))}};
  if (level > 0 && o.interval.valid())
    j["step_time_interval"] = {{"level", o.interval.level}, {"lo_s", json_number(o.interval.time_lo(o.step_s))},
                               {"hi_s", json_number(o.interval.time_hi(o.step_s))}, {"pool", o.interval.pool}};
  else
    j["step_time_interval"] = nullptr;
  return j;
}

json suggestion_json(const advise::Suggestion& s, int rank, double level) {
  json j = outcome_json(s.outcome, level);
  j["rank"] = rank;
  j["change"] = s.change;
  j["flags"] = s.flags;
  j["edit"] = s.edit.empty() ? json(nullptr) : json(s.edit);
  j["fields"] = s.fields;
  j["predict_command"] = s.predict_command;
  j["relieves"] = {{"id", std::string(advise::id(s.addresses))}, {"label", std::string(advise::label(s.addresses))},
                   {"loss_s", json_number(s.loss_s)}, {"share", json_number(s.loss_share)}};
  j["gain"] = json_number(s.gain);
  j["gain_interval"] = s.gain_interval_known ? json{{"level", level}, {"lo", json_number(s.gain_lo)}, {"hi", json_number(s.gain_hi)}}
                                             : json(nullptr);
  j["saved_s"] = json_number(s.saved_s);
  j["time_change"] = json_number(s.time_change);
  j["freed_bytes"] = std::llround(s.freed_bytes);
  j["frees"] = s.frees.empty() ? json(nullptr) : json(std::string(s.frees));
  j["changes_numerics"] = s.changes_numerics;
  return j;
}

std::string header(const advise::Advice& a, const Inputs& in) {
  std::string o;
  if (in.gpu && in.model && in.plan)
    o += fmt::format("{} on {} x {}{}\nplan: micro-batch {}, global batch {}, sequence {}; {}\n", in.model->name,
                     in.plan->parallel.gpus(), in.gpu->name, a.prediction.calibrated ? " (calibrated)" : "",
                     in.plan->micro_batch, a.base.plan.effective_global_batch(), graph::seq_len(*in.model, *in.plan),
                     spec::plan_summary(*in.plan));
  if (in.calibration && in.gpu && in.plan)
    o += calibration_line(calibration_use(in.calibration, *in.gpu, *in.plan)) + "\n";
  return o;
}

std::string base_line(const advise::Advice& a) {
  return fmt::format("step {}, {}, MFU {}; {}", format_seconds(a.base.step_s), text::tokens_per_s(a.base.tokens_per_s),
                     format_percent(a.base.mfu), advice_memory_line(a));
}

std::string evaluated_line(const advise::Advice& a) {
  std::string o = fmt::format("{} changed plans evaluated through the engine ({} the model or GPU cannot run); every "
                              "gain is a prediction of the changed plan at the same GPUs and global batch",
                              a.evaluated, a.invalid);
  const auto local_batch = [](const advise::Suggestion& s) { return s.family == "local_batch"; };
  if (std::any_of(a.speed.begin(), a.speed.end(), local_batch) ||
      std::any_of(a.memory_savers.begin(), a.memory_savers.end(), local_batch))
    o += " (a torchtitan local batch change: at the global batch it gives)";
  if (!a.edit_language.empty())
    o += fmt::format("; {} changes with no setting in the {} left out", a.not_offered, a.edit_language);
  return o;
}

/// "changes as edits to train.toml (torchtitan TOML)"; "" for a plan not imported.
std::string edits_line(const advise::Advice& a) {
  if (a.edit_language.empty()) return "";
  return fmt::format("changes as edits to {} ({})", a.edit_file, a.edit_language);
}

/// The speed and memory tables name each change's edit of the imported file
/// in place of Ridgeline's flags.
void use_edits(const advise::Advice& a, text::Table& t, const std::vector<advise::Suggestion>& list) {
  if (a.edit_language.empty()) return;
  for (size_t c = 0; c < t.head.size(); ++c) {
    if (t.head[c] != "flags") continue;
    t.head[c] = "edit";
    for (size_t i = 0; i < t.rows.size() && i < list.size(); ++i) t.rows[i][c] = list[i].edit;
  }
}

std::string apply_line(const advise::Advice& a) {
  if (a.speed.empty()) return "";
  const auto& s = a.speed.front();
  if (a.edit_language.empty()) return "apply #1: " + s.predict_command + "\n";
  return fmt::format("apply #1 to {}: {}\n  predicted by: {}\n", a.edit_file, s.edit, s.predict_command);
}

}  // namespace

text::Table advice_losses(const advise::Advice& a) {
  text::Table t;
  t.head = {"where the step goes", "time", "share", "largest parts"};
  t.numeric = {false, true, true, false};
  const auto& d = a.decomposition;
  t.rows.push_back({"ideal (GEMMs and attention at the sustained peak)", format_seconds(d.ideal_s),
                    format_percent(d.ideal_share()), ""});
  std::vector<const advise::Loss*> ls;
  for (const auto& l : d.losses)
    if (std::abs(l.seconds) >= 5e-4 * d.step_s) ls.push_back(&l);
  std::stable_sort(ls.begin(), ls.end(), [](const advise::Loss* x, const advise::Loss* y) { return x->seconds > y->seconds; });
  for (const auto* l : ls)
    t.rows.push_back({std::string(advise::label(l->kind)), format_seconds(l->seconds), format_percent(l->share),
                      parts_text(*l)});
  t.rows.push_back({"step", format_seconds(d.step_s), "100.0%", ""});
  return t;
}

text::Table advice_speed(const advise::Advice& a) {
  text::Table t;
  t.head = {"#", "change", "flags", "relieves", "loss", "step", "tokens/s", "gain", "gain interval", "peak", "fits"};
  t.numeric = {true, false, false, false, true, true, true, true, false, true, false};
  for (size_t i = 0; i < a.speed.size(); ++i) {
    const auto& s = a.speed[i];
    t.rows.push_back({std::to_string(i + 1), s.change, s.flags, std::string(advise::label(s.addresses)),
                      fmt::format("{} ({})", format_seconds(s.loss_s), format_percent(s.loss_share)),
                      format_seconds(s.outcome.step_s), units::format_count(s.outcome.tokens_per_s),
                      signed_pct(s.gain), gain_range(s), format_bytes(s.outcome.peak_bytes), fits_word(s.outcome)});
  }
  use_edits(a, t, a.speed);
  return t;
}

text::Table advice_memory(const advise::Advice& a) {
  text::Table t;
  t.head = {"#", "change", "flags", "frees", "freed", "peak", "fits", "step", "time"};
  t.numeric = {true, false, false, false, true, true, false, true, true};
  for (size_t i = 0; i < a.memory_savers.size(); ++i) {
    const auto& s = a.memory_savers[i];
    // The ranking puts a change that alters the numerics after one that
    // does not (advise::rank_memory_savers); the list says which.
    const bool say = s.changes_numerics && s.change.find("numerics") == std::string::npos;
    t.rows.push_back({std::to_string(i + 1), say ? s.change + " (numerics change)" : s.change, s.flags,
                      s.frees.empty() ? "" : std::string(s.frees),
                      format_bytes(s.freed_bytes), format_bytes(s.outcome.peak_bytes), fits_word(s.outcome),
                      format_seconds(s.outcome.step_s), signed_pct(s.time_change)});
  }
  use_edits(a, t, a.memory_savers);
  return t;
}

std::string advice_combined_line(const advise::Advice& a) {
  const auto& c = a.combined;
  if (!c.tried) return "";
  std::string of;
  for (int i : c.of) of += fmt::format("{}#{}", of.empty() ? "" : " + ", i + 1);
  if (c.outcome.status == engine::Status::kInvalid)
    return fmt::format("together ({}): {}: cannot run: {}", of, a.edit_language.empty() ? c.flags : c.edit,
                       c.outcome.problem);
  return fmt::format("together ({}): {}: step {}, {}, {} ({} were they independent){}", of,
                     a.edit_language.empty() ? c.flags : c.edit,
                     format_seconds(c.outcome.step_s), text::tokens_per_s(c.outcome.tokens_per_s), signed_pct(c.gain),
                     signed_pct(c.gain_if_independent), c.outcome.fits ? "" : "; does not fit");
}

std::string advice_memory_line(const advise::Advice& a) {
  const auto& m = a.memory;
  return fmt::format("peak {} of {} ({}{}), {} the largest ({})", format_bytes(m.peak_bytes),
                     format_bytes(m.capacity_bytes), format_percent(m.fraction), m.fits ? "" : ", does not fit",
                     m.dominant.empty() ? "nothing" : m.dominant, format_bytes(m.dominant_bytes));
}

std::string advice_table(const advise::Advice& a, const Inputs& in, bool wide) {
  std::string o = header(a, in);
  if (a.base.status == engine::Status::kInvalid) return o + "invalid plan: " + a.base.problem + "\n";
  o += base_line(a) + "\n";
  if (const std::string e = edits_line(a); !e.empty()) o += e + "\n";
  o += "\n";
  text::Table losses = advice_losses(a), speed = advice_speed(a), memory = advice_memory(a);
  // Without `wide`, an imported plan's edits (often longer than a flag)
  // leave the tables and follow each as a list, one line per suggestion.
  const bool edit_lists = !wide && !a.edit_language.empty();
  if (!wide) {
    for (auto& r : losses.rows)  // the largest part only
      if (const auto comma = r.back().find(", "); comma != std::string::npos) r.back() = r.back().substr(0, comma) + ", ...";
    text::drop_columns(speed, {"relieves", "loss"});
    text::drop_columns(memory, {"frees"});
    if (edit_lists) {
      text::drop_columns(speed, {"edit"});
      text::drop_columns(memory, {"edit"});
    }
  }
  const auto edit_list = [&](const std::vector<advise::Suggestion>& list) {
    std::string e;
    if (!edit_lists) return e;
    e = "edits:\n";
    for (size_t i = 0; i < list.size(); ++i) e += fmt::format("  #{} {}\n", i + 1, list[i].edit);
    return e;
  };
  o += plain_table(losses) + "\n";
  if (a.speed.empty()) {
    o += a.base.fits ? "no change tried makes this plan faster and still fits\n"
                     : "no change tried makes this plan fit; see the memory suggestions\n";
  } else {
    o += "suggestions, by tokens/s gained\n" + plain_table(speed) + edit_list(a.speed);
    const std::string c = advice_combined_line(a);
    if (!c.empty()) o += "  " + c + "\n";
  }
  if (!a.memory_savers.empty())
    o += "\nmemory: what frees the most at the least time\n" + plain_table(memory) + edit_list(a.memory_savers);
  o += "\n" + evaluated_line(a) + "\n";
  if (!a.speed.empty() && a.speed.front().gain_interval_known)
    o += fmt::format("gain interval: {} level, from the two plans' step-time intervals (one pool: only the "
                     "within-source spread remains in a ratio)\n",
                     text::level(in.interval_level));
  o += apply_line(a);
  return o;
}

json advice_json(const advise::Advice& a, const Inputs& in) {
  json j;
  j["schema"] = "ridgeline.advice/1";
  j["status"] = std::string(engine::name(a.base.status));
  if (a.base.status == engine::Status::kInvalid) {
    j["problem"] = a.base.problem;
    return j;
  }
  if (in.gpu) j["gpu"] = {{"id", in.gpu->id}, {"name", in.gpu->name}, {"calibrated", a.prediction.calibrated}};
  if (in.model) j["model"] = {{"id", in.model->id}, {"name", in.model->name}};
  if (in.plan && in.model) j["plan"] = plan_json(a.base.plan, *in.model);
  if (in.calibration && in.gpu && in.plan)
    j["calibration"] = calibration_json(calibration_use(in.calibration, *in.gpu, *in.plan));
  j["base"] = outcome_json(a.base, in.interval_level);
  json losses = json::array();
  for (const auto& l : a.decomposition.losses) {
    json parts = json::array();
    for (const auto& p : l.parts) parts.push_back({{"name", p.name}, {"seconds", json_number(p.seconds)}});
    losses.push_back({{"id", std::string(advise::id(l.kind))}, {"label", std::string(advise::label(l.kind))},
                      {"seconds", json_number(l.seconds)}, {"share", json_number(l.share)}, {"parts", parts}});
  }
  j["decomposition"] = {{"step_time_s", json_number(a.decomposition.step_s)}, {"ideal_s", json_number(a.decomposition.ideal_s)},
                        {"ideal_share", json_number(a.decomposition.ideal_share())}, {"losses", losses}};
  j["memory_pressure"] = {{"peak_memory_bytes", std::llround(a.memory.peak_bytes)},
                          {"capacity_bytes", std::llround(a.memory.capacity_bytes)},
                          {"fraction", json_number(a.memory.fraction)},
                          {"dominant", std::string(a.memory.dominant)},
                          {"dominant_bytes", std::llround(a.memory.dominant_bytes)},
                          {"fits", a.memory.fits}};
  json speed = json::array(), mem = json::array();
  for (size_t i = 0; i < a.speed.size(); ++i)
    speed.push_back(suggestion_json(a.speed[i], static_cast<int>(i) + 1, in.interval_level));
  for (size_t i = 0; i < a.memory_savers.size(); ++i)
    mem.push_back(suggestion_json(a.memory_savers[i], static_cast<int>(i) + 1, in.interval_level));
  j["suggestions"] = speed;
  j["memory_suggestions"] = mem;
  if (a.combined.tried) {
    json of = json::array();
    for (int i : a.combined.of) of.push_back(i + 1);
    json c = outcome_json(a.combined.outcome, in.interval_level);
    c["of"] = of;
    c["flags"] = a.combined.flags;
    c["edit"] = a.combined.edit.empty() ? json(nullptr) : json(a.combined.edit);
    c["predict_command"] = a.combined.predict_command;
    c["gain"] = json_number(a.combined.gain);
    c["gain_if_independent"] = json_number(a.combined.gain_if_independent);
    if (a.combined.outcome.status == engine::Status::kInvalid) c["problem"] = a.combined.outcome.problem;
    j["combined"] = c;
  } else {
    j["combined"] = nullptr;
  }
  j["evaluated"] = a.evaluated;
  j["invalid"] = a.invalid;
  j["edits"] = a.edit_language.empty()
                   ? json(nullptr)
                   : json{{"format", a.edit_language}, {"file", a.edit_file}, {"not_offered", a.not_offered}};
  return j;
}

std::string advice_markdown(const advise::Advice& a, const Inputs& in) {
  std::string o = "# Advice\n\n";
  const std::string h = header(a, in);
  for (size_t s = 0, e; s < h.size(); s = e + 1) {
    e = h.find('\n', s);
    o += h.substr(s, e - s) + "  \n";
  }
  if (a.base.status == engine::Status::kInvalid) return o + "\nInvalid plan: " + a.base.problem + "\n";
  o += base_line(a) + "\n\n";
  if (const std::string e = edits_line(a); !e.empty()) o += e + ".\n\n";
  o += "## Where the step goes\n\n" + markdown_table(advice_losses(a));
  o += "## Suggestions, by tokens/s gained\n\n";
  if (a.speed.empty()) o += "No change tried makes this plan faster and still fits.\n\n";
  else o += markdown_table(advice_speed(a));
  const std::string c = advice_combined_line(a);
  if (!c.empty()) o += "Together: " + c.substr(c.find(':') + 2) + "\n\n";
  if (!a.memory_savers.empty()) o += "## Memory: what frees the most at the least time\n\n" + markdown_table(advice_memory(a));
  o += evaluated_line(a) + ".\n";
  if (!a.speed.empty() && a.edit_language.empty()) o += "\nApply #1: `" + a.speed.front().predict_command + "`\n";
  else if (!a.speed.empty())
    o += fmt::format("\nApply #1 to `{}`: `{}` (predicted by `{}`)\n", a.edit_file, a.speed.front().edit,
                     a.speed.front().predict_command);
  return o;
}

}  // namespace ridgeline::report
