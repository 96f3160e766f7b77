#include "common.hpp"

#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/plan_fields.hpp"
#include "ridgeline/uncertainty/interval.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::cli {

namespace fs = std::filesystem;

std::string data_dir() { return spec::data_dir(); }

std::vector<std::string> list_names(const std::string& subdir) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(fs::path(data_dir()) / subdir, ec))
    if (e.path().extension() == ".yaml") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
  return s;
}

std::string resolve_path(const std::string& name, const std::string& subdir, const std::string& flag,
                         const std::string& what) {
  if (name.find('/') != std::string::npos || name.ends_with(".yaml") || name.ends_with(".json") ||
      name.ends_with(".yml")) {
    if (!fs::exists(name)) throw support::SpecError({name, 0, 0}, "", "cannot read file: no such file");
    return name;
  }
  fs::path p = fs::path(data_dir()) / subdir / (name + ".yaml");
  if (fs::exists(p)) return p.string();
  auto names = list_names(subdir);
  std::vector<std::string> prefixed;
  for (const auto& n : names)
    if (n.rfind(name, 0) == 0) prefixed.push_back(n);
  std::string hint;
  if (prefixed.size() > 1) hint = fmt::format(" (did you mean one of {}?)", join(prefixed));
  else if (auto guess = support::closest_match(name, names); !guess.empty()) hint = fmt::format(" (did you mean '{}'?)", guess);
  throw UsageError{flag, fmt::format("unknown {} '{}'{}; known: {}", what, name, hint, join(names))};
}

}  // namespace

spec::HardwareSpec resolve_gpu(const std::string& name) {
  return spec::load_hardware(resolve_path(name, "hardware_profiles", "--gpu", "GPU"));
}

spec::ModelSpec resolve_model(const std::string& name) {
  const std::string path = resolve_path(name, "models", "--model", "model");
  if (path.ends_with(".json")) return spec::load_hf_config(path);
  return spec::load_model(path);
}

void PlanFlags::add_to(CLI::App& app, bool with_parallel) {
  const auto fields = spec::plan_fields();
  values.assign(fields.size(), std::nullopt);
  switches.assign(fields.size(), std::nullopt);
  app.add_option("--plan", plan_file, "Training plan YAML (flags override its fields)");
  static const spec::PlanSpec kDefault;
  for (size_t i = 0; i < fields.size(); ++i) {
    const auto& f = fields[i];
    if (f.flag.empty() || (!with_parallel && f.key.starts_with("parallel."))) continue;
    std::string help(f.help);
    if (f.type == spec::FieldType::kWord) help += ": " + f.choices();
    if (f.type == spec::FieldType::kInt) help += fmt::format(" ({:.0f}-{:.0f}", f.lo, f.hi);
    else help += " (";
    if (help.find("default") == std::string::npos)
      help += (help.back() == '(' ? "default " : ", default ") + spec::field_text(f, kDefault);
    help += ")";
    if (help.ends_with(" ()")) help.resize(help.size() - 3);
    const std::string flag = "--" + std::string(f.flag);
    if (f.type == spec::FieldType::kBool) {
      // A flag function runs only when the flag is given (CLI11 assigns an
      // optional<bool> flag target false even when it is absent, which would
      // override the plan file).
      app.add_flag_function(flag + ",!--no-" + std::string(f.flag),
                            [this, i](std::int64_t n) { switches[i] = n > 0; }, help);
      continue;
    }
    const char* type = f.type == spec::FieldType::kInt ? "N" : f.type == spec::FieldType::kWord ? "WORD" : "X";
    app.add_option(flag, values[i], help)->type_name(type);
  }
  app.add_flag("--no-calibration", no_calibration, "Ignore the profile's calibration block");
}

bool PlanFlags::given(std::string_view key) const {
  const auto fields = spec::plan_fields();
  for (size_t i = 0; i < fields.size() && i < values.size(); ++i)
    if (fields[i].key == key) return values[i].has_value() || switches[i].has_value();
  return false;
}

spec::PlanSpec PlanFlags::build(const spec::ModelSpec& model) const {
  spec::PlanSpec p = plan_file.empty() ? spec::PlanSpec{} : spec::load_plan(plan_file);
  if (plan_file.empty()) p.seq_len = std::min(8192, model.max_seq_len);
  const auto fields = spec::plan_fields();
  for (size_t i = 0; i < fields.size() && i < values.size(); ++i) {
    const auto& f = fields[i];
    if (switches[i]) f.bool_ref(p) = *switches[i];
    if (!values[i]) continue;
    if (auto e = spec::set_field(f, p, *values[i]); !e.empty()) throw UsageError{"--" + std::string(f.flag), e};
  }
  if (p.global_batch > 0 && p.micro_batch > p.global_batch)
    throw UsageError{"--micro-batch", fmt::format("micro-batch {} exceeds the global batch {}", p.micro_batch,
                                                  p.global_batch)};
  return p;
}

void write_output(const std::string& path, const std::string& text) {
  if (path.empty() || path == "-") {
    std::cout << text;
    std::cout.flush();
    return;
  }
  const fs::path target(path);
  const fs::path dir = target.has_parent_path() ? target.parent_path() : fs::path(".");
  if (!fs::is_directory(dir)) throw UsageError{"--output", fmt::format("no such directory '{}'", dir.string())};
  const fs::path tmp = dir / fmt::format(".{}.tmp{}", target.filename().string(), static_cast<long>(getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw UsageError{"--output", fmt::format("cannot write to '{}'", path)};
    out << text;
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw UsageError{"--output", fmt::format("cannot write to '{}'", path)};
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw UsageError{"--output", fmt::format("cannot write to '{}'", path)};
  }
}

std::string problem_line(const engine::Problem& p) {
  if (const spec::PlanField* f = spec::find_plan_field(p.field); f && f->key == p.field && !f->flag.empty())
    return fmt::format("error: {} (--{}): {}", p.field, f->flag, p.message);
  return fmt::format("error: {}: {}", p.field, p.message);
}

Format parse_format(const std::string& s) {
  if (s == "table") return Format::kTable;
  if (s == "json") return Format::kJson;
  if (s == "csv") return Format::kCsv;
  throw UsageError{"--format", fmt::format("expected one of table, json, csv, got \"{}\"", s)};
}

int guarded(const std::function<int()>& body) {
  try {
    return body();
  } catch (const support::SpecError& e) {
    for (const auto& d : e.diagnostics()) std::cerr << d.format() << "\n";
    return kExitBadInput;
  } catch (const UsageError& e) {
    std::cerr << "error: " << e.flag << ": " << e.message << "\n";
    return kExitBadInput;
  } catch (const std::bad_alloc&) {
    std::cerr << "error: out of memory\n";
    return kExitInternal;
  } catch (const std::exception& e) {
    std::cerr << "internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}

void add_interval_level(CLI::App& app, double& level) {
  level = uncertainty::kDefaultLevel;
  app.add_option("--interval-level", level,
                 "Nominal level of the prediction intervals, 0.5 to 0.99 (default 0.8: an 80% interval; "
                 "docs/accuracy.md says how they are made and how often they hold)");
}

void check_interval_level(double level) {
  std::string why;
  if (!uncertainty::valid_level(level, why)) throw UsageError{"--interval-level", why};
}

}  // namespace ridgeline::cli
