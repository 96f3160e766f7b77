#include "common.hpp"

#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include "overrides.hpp"
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

spec::HardwareSpec resolve_gpu(const std::string& name, const std::vector<std::string>& sets) {
  for (const auto& s : parse_settings(sets))
    if (s.target == SetTarget::kGpu) throw UsageError{"--set", "gpu.* settings are not read yet"};
  return spec::load_hardware(resolve_path(name, "hardware_profiles", "--gpu", "GPU"));
}

spec::ModelSpec resolve_model(const std::string& name, const std::vector<std::string>& sets) {
  for (const auto& s : parse_settings(sets))
    if (s.target == SetTarget::kModel) throw UsageError{"--set", "model.* settings are not read yet"};
  const std::string path = resolve_path(name, "models", "--model", "model");
  if (path.ends_with(".json")) return spec::load_hf_config(path);
  return spec::load_model(path);
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
