#include "ridgeline/spec/runs.hpp"

#include <algorithm>
#include <array>
#include <filesystem>
#include <fmt/format.h>

#include "ridgeline/spec/run_logs.hpp"
#include "ridgeline/spec/yaml_reader.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::spec {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view kLogFormatWords[] = {"torchtitan", "megatron", "hf_trainer_state", "kineto"};

/// What a field's text is read as.
enum class Kind : std::uint8_t { kText, kPositive, kLogFormat, kMemoryKind };

/// The fields of a run: the one table behind the YAML keys, the CSV columns
/// and their checks. `measured`: under `measured:` in YAML.
struct RunField {
  std::string_view key;
  bool measured;
  bool required;
  Kind kind;
  double max;                 // kPositive: the largest value taken
  std::string_view example;   // kPositive: "a step time in seconds such as 1.25"
};

constexpr RunField kFields[] = {
    {"name", false, true, Kind::kText, 0, ""},
    {"gpu", false, true, Kind::kText, 0, ""},
    {"model", false, true, Kind::kText, 0, ""},
    {"plan", false, false, Kind::kText, 0, ""},
    {"plan_file", false, false, Kind::kText, 0, ""},
    {"log", false, false, Kind::kText, 0, ""},
    {"log_format", false, false, Kind::kLogFormat, 0, ""},
    {"source", false, false, Kind::kText, 0, ""},
    {"tokens_per_s_per_gpu", true, false, Kind::kPositive, 1e12, "tokens per second per GPU such as 5762"},
    {"step_time_s", true, false, Kind::kPositive, 1e7, "a step time in seconds such as 1.25"},
    {"tokens_per_s", true, false, Kind::kPositive, 1e15, "the job's tokens per second such as 46096"},
    {"peak_memory_gib", true, false, Kind::kPositive, 1e6, "a peak memory in GiB such as 61.3"},
    {"memory_kind", true, false, Kind::kMemoryKind, 0, ""},
};
constexpr size_t kFieldCount = std::size(kFields);

/// One field as a run gave it: its text and where.
struct Given {
  bool present = false;
  std::string text;
  support::SourceLoc loc;
  std::string field;  // the dotted path a diagnostic names
};
using Givens = std::array<Given, kFieldCount>;

size_t index_of(std::string_view key) {
  for (size_t i = 0; i < kFieldCount; ++i)
    if (kFields[i].key == key) return i;
  return kFieldCount;
}

/// A path given in the runs file: read from the runs file's folder. `only_if_there`:
/// a name (a GPU or model) stays as it is unless a file of that name is there.
std::string beside(const std::string& runs_file, const std::string& p, bool only_if_there) {
  if (p.empty() || fs::path(p).is_absolute()) return p;
  const fs::path candidate = fs::path(runs_file).parent_path() / p;
  if (only_if_there) {
    std::error_code ec;
    return fs::exists(candidate, ec) ? candidate.string() : p;
  }
  return candidate.string();
}

/// Reads the fields of one run into `r`, then checks them together.
/// `where`: the run's own location (for a problem of the whole run).
void build_run(const Givens& g, const support::SourceLoc& where, const std::string& field, const std::string& file,
               RunSpec& r, support::DiagnosticList& d, bool misspelt = false) {
  r.field = field;
  r.loc = where;
  bool memory_kind_given = false;
  for (size_t i = 0; i < kFieldCount; ++i) {
    const Given& x = g[i];
    if (!x.present) continue;
    const RunField& f = kFields[i];
    const auto bad = [&](const std::string& message) { d.error(x.loc, x.field, message); };
    switch (f.kind) {
      case Kind::kText:
        if (x.text.empty()) bad("expected text, got an empty value");
        break;
      case Kind::kPositive: {
        std::string error;
        const auto v = parse_real_number(x.text, 0, f.max, error);
        if (!v || *v <= 0) {
          bad(fmt::format("expected {}, got \"{}\"", f.example, x.text));
          continue;
        }
        if (f.key == "tokens_per_s_per_gpu") r.measured.tokens_per_s_per_gpu = *v;
        if (f.key == "step_time_s") r.measured.step_time_s = *v;
        if (f.key == "tokens_per_s") r.measured.tokens_per_s = *v;
        if (f.key == "peak_memory_gib") r.measured.peak_memory_bytes = *v * units::kGiB;
        continue;
      }
      case Kind::kLogFormat:
        if (auto lf = parse_log_format(x.text)) r.log_format = lf;
        else bad(fmt::format("expected one of {}, got \"{}\"", log_format_choices(), x.text));
        continue;
      case Kind::kMemoryKind:
        if (x.text == "reserved") r.measured.memory_kind = MemoryKind::kReserved;
        else if (x.text == "allocated") r.measured.memory_kind = MemoryKind::kAllocated;
        else bad(fmt::format("expected one of reserved (torch.cuda.max_memory_reserved), allocated "
                             "(max_memory_allocated), got \"{}\"", x.text));
        memory_kind_given = true;
        continue;
    }
    if (f.key == "name") r.name = x.text;
    if (f.key == "gpu") r.gpu = beside(file, x.text, true), r.gpu_loc = x.loc;
    if (f.key == "model") r.model = beside(file, x.text, true), r.model_loc = x.loc;
    if (f.key == "plan") r.plan = x.text, r.plan_loc = x.loc;
    if (f.key == "plan_file") r.plan_file = beside(file, x.text, false), r.plan_file_loc = x.loc;
    if (f.key == "log") r.log = beside(file, x.text, false);
    if (f.key == "source") r.source = x.text;
  }
  // The time: one rate, from measured or from the log.
  const Given& log = g[index_of("log")];
  std::vector<const Given*> times;
  for (std::string_view k : {"tokens_per_s_per_gpu", "step_time_s", "tokens_per_s"})
    if (g[index_of(k)].present) times.push_back(&g[index_of(k)]);
  if (times.size() > 1)
    d.error(times[1]->loc, times[1]->field,
            fmt::format("give one of tokens_per_s_per_gpu, step_time_s and tokens_per_s ({} is given too)",
                        times[0]->field));
  if (log.present && !times.empty())
    d.error(times[0]->loc, times[0]->field, "the log gives the time (log: " + log.text + "): give one of the two");
  if (!log.present && times.empty() && !misspelt)
    d.error(where, field,
            "no measured time: give measured: tokens_per_s_per_gpu, step_time_s or tokens_per_s, or log: FILE");
  if (const Given& lf = g[index_of("log_format")]; lf.present && !log.present)
    d.error(lf.loc, lf.field, "log_format says how to read log: FILE; give log: too");
  if (const Given& mk = g[index_of("memory_kind")]; memory_kind_given && !g[index_of("peak_memory_gib")].present)
    d.error(mk.loc, mk.field, "memory_kind says what peak_memory_gib measured; give peak_memory_gib too");
  if (log.present && !r.log.empty()) {
    std::error_code ec;
    if (!fs::is_regular_file(r.log, ec))
      d.error(log.loc, log.field, fmt::format("cannot read '{}': no such file", r.log));
  }
  if (const Given& pf = g[index_of("plan_file")]; pf.present && !r.plan_file.empty()) {
    std::error_code ec;
    if (!fs::is_regular_file(r.plan_file, ec))
      d.error(pf.loc, pf.field, fmt::format("cannot read '{}': no such file", r.plan_file));
  }
}

// ---- YAML ------------------------------------------------------------------------

void read_yaml(const std::string& path, RunsSpec& out, support::DiagnosticList& d) {
  const YamlNode root = load_yaml_file(path);
  MapReader top(root, path, "", d);
  if (!top.valid()) return;
  const YamlNode runs = top.sequence("runs", true);
  if (runs.IsDefined() && runs.size() == 0) top.error_at("runs", "expected at least one run");
  for (size_t i = 0; runs.IsDefined() && i < runs.size() && !d.full(); ++i) {
    const std::string prefix = fmt::format("runs[{}]", i);
    MapReader run(runs[i], path, prefix, d);
    if (!run.valid()) continue;
    Givens g;
    std::optional<MapReader> measured = run.map("measured");
    for (size_t k = 0; k < kFieldCount; ++k) {
      const RunField& f = kFields[k];
      MapReader* m = f.measured ? (measured ? &*measured : nullptr) : &run;
      if (!m) continue;
      const std::string key(f.key);
      m->allow(key);  // known, for a misspelling's did-you-mean
      if (!m->has(key) && !f.required && !m->node(key).IsDefined()) continue;
      const auto text = m->string(key, f.required);
      if (!text) continue;
      g[k] = Given{true, *text, loc_of(path, m->node(key)), m->field(key)};
    }
    const size_t before = d.items().size();
    if (measured) measured->finish();
    run.finish();
    RunSpec r;
    // An unknown key (a misspelt field) explains a missing one: no second error for it.
    build_run(g, loc_of(path, runs[i]), prefix, path, r, d, d.items().size() > before);
    out.runs.push_back(std::move(r));
  }
  top.finish();
}

// ---- CSV (RFC 4180) ----------------------------------------------------------

struct Cell {
  std::string text;
  int line = 0, col = 0;
};
struct Row {
  int line = 0;
  std::vector<Cell> cells;
};

/// The rows of a CSV text: comma-separated cells, a cell in double quotes
/// may hold commas, line breaks and "" for a quote. Blank lines are skipped.
std::vector<Row> parse_csv(const std::string& text, const std::string& path) {
  std::vector<Row> rows;
  Row row;
  Cell cell;
  int line = 1, col = 1;
  size_t i = 0;
  bool at_cell_start = true, any = false;
  const auto end_cell = [&] {
    row.cells.push_back(std::move(cell));
    cell = Cell{};
    at_cell_start = true;
  };
  const auto end_row = [&] {
    if (any) {
      end_cell();
      rows.push_back(std::move(row));
    }
    row = Row{};
    cell = Cell{};
    at_cell_start = true;
    any = false;
  };
  while (i < text.size()) {
    const char c = text[i];
    if (at_cell_start) {
      cell.line = line, cell.col = col;
      if (!any) row.line = line;
      at_cell_start = false;
      if (c == '"') {
        const int qline = line, qcol = col;
        ++i, ++col;
        for (;;) {
          if (i >= text.size())
            throw support::SpecError({path, qline, qcol}, "", "malformed CSV: a quoted cell is not closed");
          if (text[i] == '"') {
            if (i + 1 < text.size() && text[i + 1] == '"') {
              cell.text.push_back('"');
              i += 2, col += 2;
              continue;
            }
            ++i, ++col;
            break;
          }
          if (text[i] == '\n') ++line, col = 0;
          cell.text.push_back(text[i]);
          ++i, ++col;
        }
        any = true;
        if (i < text.size() && text[i] != ',' && text[i] != '\n' && text[i] != '\r')
          throw support::SpecError({path, line, col}, "", "malformed CSV: text after a quoted cell's closing quote");
        continue;
      }
    }
    if (c == ',') {
      any = true;
      end_cell();
      ++i, ++col;
    } else if (c == '\r' || c == '\n') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      end_row();
      ++i, ++line, col = 1;
    } else {
      if (c != ' ' && c != '\t') any = true;
      cell.text.push_back(c);
      ++i, ++col;
    }
  }
  end_row();
  for (auto& r : rows)
    for (auto& c : r.cells) {
      const size_t b = c.text.find_first_not_of(" \t"), e = c.text.find_last_not_of(" \t");
      c.text = b == std::string::npos ? std::string() : c.text.substr(b, e - b + 1);
    }
  return rows;
}

void read_csv(const std::string& path, RunsSpec& out, support::DiagnosticList& d) {
  const std::string text = read_text_file(path);
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw support::SpecError({path, 1, 1}, "", "file is empty; expected a header row of run fields");
  const std::vector<Row> rows = parse_csv(text, path);
  const Row& head = rows.front();
  std::vector<size_t> column(head.cells.size(), kFieldCount);
  std::vector<std::string> known = run_field_names();
  for (size_t c = 0; c < head.cells.size(); ++c) {
    const Cell& h = head.cells[c];
    const size_t k = index_of(h.text);
    if (k == kFieldCount) {
      d.error({path, h.line, h.col}, "",
              fmt::format("unknown column '{}'{}", h.text, support::did_you_mean(h.text, known)));
      continue;
    }
    for (size_t p = 0; p < c; ++p)
      if (column[p] == k) d.error({path, h.line, h.col}, "", fmt::format("column '{}' given twice", h.text));
    column[c] = k;
  }
  for (const RunField& f : kFields)
    if (f.required && std::find(column.begin(), column.end(), index_of(f.key)) == column.end())
      d.error({path, head.line, 1}, std::string(f.key), "missing required column");
  if (d.has_errors()) return;
  if (rows.size() < 2) d.error({path, head.line, 1}, "runs", "expected at least one run after the header row");
  for (size_t ri = 1; ri < rows.size() && !d.full(); ++ri) {
    const Row& row = rows[ri];
    if (row.cells.size() > head.cells.size()) {
      const Cell& extra = row.cells[head.cells.size()];
      d.error({path, extra.line, extra.col}, "",
              fmt::format("{} cells, but the header names {} columns", row.cells.size(), head.cells.size()));
      continue;
    }
    Givens g;
    for (size_t c = 0; c < row.cells.size(); ++c) {
      const Cell& cell = row.cells[c];
      const size_t k = column[c];
      if (cell.text.empty()) continue;
      g[k] = Given{true, cell.text, {path, cell.line, cell.col}, std::string(kFields[k].key)};
    }
    for (size_t k = 0; k < kFieldCount; ++k)
      if (kFields[k].required && !g[k].present)
        d.error({path, row.line, 1}, std::string(kFields[k].key), "missing required field");
    RunSpec r;
    build_run(g, {path, row.line, 1}, fmt::format("row {}", row.line), path, r, d);
    out.runs.push_back(std::move(r));
  }
}

}  // namespace

std::string_view name(MemoryKind k) { return k == MemoryKind::kAllocated ? "allocated" : "reserved"; }

std::string_view name(LogFormat f) { return kLogFormatWords[static_cast<int>(f)]; }

std::optional<LogFormat> parse_log_format(std::string_view s) {
  for (size_t i = 0; i < std::size(kLogFormatWords); ++i)
    if (kLogFormatWords[i] == s) return static_cast<LogFormat>(i);
  return std::nullopt;
}

std::string log_format_choices() {
  std::string s;
  for (auto w : kLogFormatWords) s += (s.empty() ? "" : ", ") + std::string(w);
  return s;
}

std::vector<std::string> run_field_names() {
  std::vector<std::string> v;
  for (const RunField& f : kFields) v.emplace_back(f.key);
  return v;
}

RunsSpec load_runs(const std::string& path) {
  support::DiagnosticList d;
  RunsSpec out;
  out.file = path;
  if (path.ends_with(".csv")) read_csv(path, out, d);
  else read_yaml(path, out, d);
  for (size_t i = 0; i < out.runs.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (!out.runs[i].name.empty() && out.runs[i].name == out.runs[j].name)
        d.error(out.runs[i].loc, out.runs[i].field + ".name",
                fmt::format("'{}' names an earlier run too; each run needs a name of its own", out.runs[i].name));
  d.throw_if_errors();
  // The logs, each located in itself.
  for (auto& r : out.runs) {
    if (r.log.empty()) continue;
    RunMeasurement m = read_run_log(r.log, r.log_format);
    if (r.measured.peak_memory_bytes > 0) {
      m.peak_memory_bytes = r.measured.peak_memory_bytes;
      m.memory_kind = r.measured.memory_kind;
      m.basis += "; peak memory from measured:";
    }
    r.measured = m;
  }
  return out;
}

}  // namespace ridgeline::spec
