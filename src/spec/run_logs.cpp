#include "ridgeline/spec/run_logs.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fmt/format.h>
#include <sstream>
#include <vector>

#include "ridgeline/spec/json_reader.hpp"
#include "ridgeline/spec/yaml_reader.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::spec {

namespace {

/// One logged entry: the step it ends at and the figure it reports.
struct Entry {
  long long step = 0;
  double value = 0;       // tps, or a step time in seconds
  double memory_bytes = 0;  // 0 = none on this entry
  double extra = 0;         // a figure reported beside it (Megatron's TFLOP/s/GPU); 0 = none
  int line = 0;
  long long prev = 0;     // the step the previous entry ended at (0: the first, or after a restart)
};

/// `line` without ANSI escape sequences (torchtitan colours its log).
std::string strip_ansi(std::string_view line) {
  std::string out;
  out.reserve(line.size());
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '[') {
      i += 2;
      while (i < line.size() && !(line[i] >= '@' && line[i] <= '~')) ++i;
      continue;
    }
    out.push_back(line[i]);
  }
  return out;
}

/// The number right after `label` (spaces skipped; thousands separators
/// allowed), or nullopt when the label is absent or no number follows.
std::optional<double> number_after(std::string_view line, std::string_view label, size_t from = 0) {
  const size_t at = line.find(label, from);
  if (at == std::string_view::npos) return std::nullopt;
  size_t i = at + label.size();
  while (i < line.size() && line[i] == ' ') ++i;
  std::string digits;
  while (i < line.size() && (std::isdigit(static_cast<unsigned char>(line[i])) || line[i] == '.' || line[i] == ',' ||
                             line[i] == 'e' || line[i] == 'E' || line[i] == '+' || line[i] == '-')) {
    if (line[i] != ',') digits.push_back(line[i]);
    ++i;
  }
  if (digits.empty()) return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(digits.c_str(), &end);
  if (end != digits.c_str() + digits.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// Sets each entry's previous step: the one before it, or 0 for the first
/// and for a step that does not increase (a restart: warm-up again).
void link(std::vector<Entry>& es) {
  long long prev = 0;
  for (auto& e : es) {
    if (e.step <= prev) prev = 0;
    e.prev = prev;
    prev = e.step;
  }
}

/// "1, 10, 20" (the first few, then "and N more").
std::string step_list(const std::vector<long long>& steps) {
  std::string s;
  for (size_t i = 0; i < steps.size() && i < 6; ++i) s += (i ? ", " : "") + std::to_string(steps[i]);
  if (steps.size() > 6) s += fmt::format(" and {} more", steps.size() - 6);
  return s;
}

/// The steady-state entries (none of the run's first kWarmupSteps steps),
/// with the basis text; throws when none is left. `what` names the entries.
std::vector<const Entry*> steady(const std::vector<Entry>& es, const std::string& path, std::string_view what,
                                 std::string& basis) {
  std::vector<const Entry*> kept;
  std::vector<long long> skipped;
  for (const auto& e : es) {
    if (e.prev >= kWarmupSteps) kept.push_back(&e);
    else skipped.push_back(e.step);
  }
  if (kept.empty())
    throw support::SpecError({path, es.back().line, 1}, "",
                             fmt::format("none of its {} {} is past the first {} steps of the run (warm-up): log "
                                         "more steps",
                                         es.size(), what, kWarmupSteps));
  basis = fmt::format("median of {} {} (steps {}-{})", kept.size(), what, kept.front()->step, kept.back()->step);
  if (!skipped.empty())
    basis += fmt::format("; warm-up skipped: step{} {} (entries covering the run's first {} steps)",
                         skipped.size() == 1 ? "" : "s", step_list(skipped), kWarmupSteps);
  return kept;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    out.push_back(std::move(line));
  }
  return out;
}

// ---- torchtitan ----------------------------------------------------------------

RunMeasurement read_torchtitan(const std::string& path, const std::string& text) {
  std::vector<Entry> es;
  const auto lines = lines_of(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].find("tps:") == std::string::npos) continue;
    const std::string l = strip_ansi(lines[i]);
    if (l.find("validate step:") != std::string::npos) continue;  // log_validation: not a training step
    const auto step = number_after(l, "step:");
    const auto tps = number_after(l, "tps:");
    if (!step || !tps) continue;
    if (*tps <= 0 || *step < 1 || *step != std::floor(*step))
      throw support::SpecError({path, static_cast<int>(i + 1), 1}, "",
                               fmt::format("expected a step number >= 1 and tps > 0, got step {} and tps {}", *step,
                                           *tps));
    Entry e;
    e.step = static_cast<long long>(*step);
    e.value = *tps;
    e.line = static_cast<int>(i + 1);
    const size_t at = l.find("memory:");
    if (at != std::string::npos)
      if (auto gib = number_after(l, "memory:", at); gib && l.find("GiB", at) != std::string::npos)
        e.memory_bytes = *gib * units::kGiB;
    es.push_back(e);
  }
  if (es.empty())
    throw support::SpecError({path, 0, 0}, "",
                             "no torchtitan training lines (\"step: N ... memory: X GiB(Y%) tps: N\", "
                             "torchtitan/components/metrics.py)");
  link(es);
  RunMeasurement m;
  const auto kept = steady(es, path, "logged steps", m.basis);
  std::vector<double> tps;
  for (const Entry* e : kept) {
    tps.push_back(e->value);
    m.peak_memory_bytes = std::max(m.peak_memory_bytes, e->memory_bytes);
  }
  m.tokens_per_s_per_gpu = median(tps);
  m.basis = "torchtitan tps, " + m.basis;
  if (m.peak_memory_bytes > 0) m.basis += "; peak memory: the largest max_reserved of those steps";
  m.memory_kind = MemoryKind::kReserved;
  return m;
}

// ---- Megatron-LM ---------------------------------------------------------------

RunMeasurement read_megatron(const std::string& path, const std::string& text) {
  std::vector<Entry> es;
  double max_reserved = 0, max_allocated = 0;
  const auto lines = lines_of(text);
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.find("memory (MB)") != std::string::npos) {
      if (auto r = number_after(l, "max reserved:")) max_reserved = std::max(max_reserved, *r * units::kMiB);
      if (auto a = number_after(l, "max allocated:")) max_allocated = std::max(max_allocated, *a * units::kMiB);
      continue;
    }
    const auto ms = number_after(l, "elapsed time per iteration (ms):");
    if (!ms) continue;
    const size_t at = l.find("iteration");
    const auto it = number_after(l, "iteration", at);
    if (!it || *it < 1 || *ms <= 0)
      throw support::SpecError({path, static_cast<int>(i + 1), 1}, "",
                               "expected \"iteration N/ M | ... | elapsed time per iteration (ms): T\" with N >= 1 "
                               "and T > 0");
    Entry e;
    e.step = static_cast<long long>(*it);
    e.value = *ms / 1000.0;
    e.line = static_cast<int>(i + 1);
    if (auto tf = number_after(l, "throughput per GPU (TFLOP/s/GPU):")) e.extra = *tf;
    es.push_back(e);
  }
  if (es.empty())
    throw support::SpecError({path, 0, 0}, "",
                             "no Megatron-LM iteration lines (\"iteration N/ M | ... | elapsed time per iteration "
                             "(ms): T\", megatron/training/training.py)");
  link(es);
  RunMeasurement m;
  const auto kept = steady(es, path, "logged iterations", m.basis);
  std::vector<double> t, tflops;
  for (const Entry* e : kept) {
    t.push_back(e->value);
    if (e->extra > 0) tflops.push_back(e->extra);
  }
  m.step_time_s = median(t);
  m.basis = "Megatron-LM elapsed time per iteration, " + m.basis;
  if (!tflops.empty())
    m.basis += fmt::format("; its own throughput figure, their median: {:.1f} TFLOP/s/GPU", median(tflops));
  if (max_reserved > 0) {
    m.peak_memory_bytes = max_reserved;
    m.memory_kind = MemoryKind::kReserved;
    m.basis += "; peak memory: the largest max reserved of its memory reports";
  } else if (max_allocated > 0) {
    m.peak_memory_bytes = max_allocated;
    m.memory_kind = MemoryKind::kAllocated;
    m.basis += "; peak memory: the largest max allocated of its memory reports";
  }
  return m;
}

// ---- Hugging Face trainer_state.json -----------------------------------------

double json_number(const JsonValue& v, const std::string& field) {
  if (v.kind != JsonValue::Kind::kNumber)
    throw support::SpecError(v.loc, field, fmt::format("expected a number, got {}", describe(v)));
  return std::strtod(v.text.c_str(), nullptr);
}

RunMeasurement read_hf_trainer_state(const std::string& path, const std::string& text) {
  const JsonValue root = parse_json(text, path);
  if (root.kind != JsonValue::Kind::kObject)
    throw support::SpecError(root.loc, "", "expected a JSON object (a Trainer's trainer_state.json)");
  const JsonValue* history = root.find("log_history");
  if (!history || history->kind != JsonValue::Kind::kArray)
    throw support::SpecError(root.loc, "log_history", "expected the list of logged entries (TrainerState.log_history)");
  const JsonValue* summary = nullptr;
  for (const auto& e : history->items)
    if (e.kind == JsonValue::Kind::kObject && e.find("train_runtime")) summary = &e;
  if (!summary)
    throw support::SpecError(history->loc, "log_history",
                             "no entry with train_runtime: it is logged when train() ends (the trainer_state.json "
                             "that Trainer.save_state() writes then; a checkpoint's copy is older)");
  const JsonValue* max_steps = root.find("max_steps");
  if (!max_steps) throw support::SpecError(root.loc, "max_steps", "missing: the run's steps (TrainerState.max_steps)");
  const double steps = json_number(*max_steps, "max_steps");
  const double runtime = json_number(*summary->find("train_runtime"), "log_history.train_runtime");
  if (!(steps >= 1) || steps != std::floor(steps))
    throw support::SpecError(max_steps->loc, "max_steps", fmt::format("expected a whole number >= 1, got {}", steps));
  if (!(runtime > 0))
    throw support::SpecError(summary->find("train_runtime")->loc, "log_history.train_runtime",
                             fmt::format("expected a time in seconds > 0, got {}", runtime));
  RunMeasurement m;
  m.step_time_s = runtime / steps;
  m.basis = fmt::format("Hugging Face Trainer train_runtime {:g} s / max_steps {:g} (speed_metrics: a whole-run "
                        "average, warm-up included; the file has no per-step times",
                        runtime, steps);
  if (const JsonValue* sps = summary->find("train_samples_per_second"); sps && sps->kind == JsonValue::Kind::kNumber)
    m.basis += fmt::format("; train_samples_per_second {}", sps->text);
  m.basis += ")";
  return m;
}

// ---- PyTorch profiler (Kineto) trace ------------------------------------------

RunMeasurement read_kineto(const std::string& path, const std::string& text) {
  struct Span {
    long long n = 0;
    double dur_us = 0;
    bool host = false;
    int line = 0;
  };
  std::vector<Span> spans;
  constexpr std::string_view kPrefix = "ProfilerStep#";
  const JsonValue root = parse_json_streaming(text, path, "traceEvents", [&](const JsonValue& ev, std::size_t) {
    if (ev.kind != JsonValue::Kind::kObject) return;
    const JsonValue* name = ev.find("name");
    const JsonValue* ph = ev.find("ph");
    if (!name || name->kind != JsonValue::Kind::kString || !name->text.starts_with(kPrefix)) return;
    if (!ph || ph->text != "X") return;
    const JsonValue* dur = ev.find("dur");
    if (!dur || dur->kind != JsonValue::Kind::kNumber)
      throw support::SpecError(ev.loc, "traceEvents.dur", "expected a ProfilerStep span's duration in microseconds");
    const std::string digits = name->text.substr(kPrefix.size());
    char* end = nullptr;
    const long long n = std::strtoll(digits.c_str(), &end, 10);
    if (digits.empty() || end != digits.c_str() + digits.size() || n < 0)
      throw support::SpecError(name->loc, "traceEvents.name",
                               fmt::format("expected \"ProfilerStep#N\", N the step number, got \"{}\"", name->text));
    const JsonValue* cat = ev.find("cat");
    Span s;
    s.n = n;
    s.dur_us = std::strtod(dur->text.c_str(), nullptr);
    s.host = cat && cat->text == "user_annotation";
    s.line = ev.loc.line;
    if (!(s.dur_us > 0))
      throw support::SpecError(dur->loc, "traceEvents.dur", fmt::format("expected a duration > 0, got {}", dur->text));
    spans.push_back(s);
  });
  if (root.kind != JsonValue::Kind::kObject || !root.find("traceEvents"))
    throw support::SpecError(root.loc, "traceEvents", "expected a Chrome trace object with a traceEvents list");
  const bool host = std::any_of(spans.begin(), spans.end(), [](const Span& s) { return s.host; });
  std::vector<Entry> es;
  for (const auto& s : spans) {
    if (s.host != host) continue;
    if (std::any_of(es.begin(), es.end(), [&](const Entry& e) { return e.step == s.n + 1; })) continue;
    Entry e;
    e.step = s.n + 1;  // the profiler counts steps from 0
    e.prev = s.n;
    e.value = s.dur_us * 1e-6;
    e.line = s.line;
    es.push_back(e);
  }
  if (es.empty())
    throw support::SpecError({path, 0, 0}, "traceEvents",
                             "no \"ProfilerStep#N\" spans: record the trace with torch.profiler.profile and call "
                             "prof.step() after each training step");
  std::sort(es.begin(), es.end(), [](const Entry& a, const Entry& b) { return a.step < b.step; });
  RunMeasurement m;
  const auto kept = steady(es, path, "profiled steps", m.basis);
  std::vector<double> t;
  for (const Entry* e : kept) t.push_back(e->value);
  m.step_time_s = median(t);
  m.basis = fmt::format("PyTorch profiler ProfilerStep spans ({}; ProfilerStep#N is the run's step N + 1), ",
                        host ? "host" : "GPU") +
            m.basis;
  return m;
}

}  // namespace

std::optional<LogFormat> detect_log_format(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  if (i < text.size() && text[i] == '{') {
    if (text.find("\"traceEvents\"") != std::string_view::npos) return LogFormat::kKineto;
    if (text.find("\"log_history\"") != std::string_view::npos) return LogFormat::kHfTrainerState;
    return std::nullopt;
  }
  if (text.find("elapsed time per iteration (ms)") != std::string_view::npos) return LogFormat::kMegatron;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    const size_t step = line.find("step:");
    if (step != std::string_view::npos && line.find("tps:", step) != std::string_view::npos)
      return LogFormat::kTorchtitan;
    start = end + 1;
  }
  return std::nullopt;
}

RunMeasurement read_run_log(const std::string& path, std::optional<LogFormat> format) {
  const std::string text = read_text_file(path);
  if (!format) format = detect_log_format(text);
  if (!format)
    throw support::SpecError({path, 0, 0}, "",
                             fmt::format("cannot tell this log's format; give log_format: one of {}",
                                         log_format_choices()));
  switch (*format) {
    case LogFormat::kTorchtitan: return read_torchtitan(path, text);
    case LogFormat::kMegatron: return read_megatron(path, text);
    case LogFormat::kHfTrainerState: return read_hf_trainer_state(path, text);
    case LogFormat::kKineto: return read_kineto(path, text);
  }
  return {};
}

}  // namespace ridgeline::spec
