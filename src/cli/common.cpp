#include "common.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <iostream>
#include <unistd.h>

#include "overrides.hpp"
#include "ridgeline/spec/framework.hpp"
#include "ridgeline/spec/plan_fields.hpp"
#include "ridgeline/support/text.hpp"
#include "ridgeline/uncertainty/interval.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::cli {

namespace fs = std::filesystem;

std::string data_dir() { return spec::data_dir(); }

namespace {

using support::join;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

/// A display or Hub name as matched: lower case, spaces and underscores as dashes.
std::string display_key(std::string_view s) {
  std::string out = lower(s);
  for (char& c : out)
    if (c == ' ' || c == '_') c = '-';
  return out;
}

struct Folder {
  fs::path dir;
  bool private_folder = false;
};

/// The private folders of `env` (colon-separated, in order), then the shipped `subdir`.
std::vector<Folder> folders(const char* env, const std::string& subdir) {
  std::vector<Folder> out;
  if (const char* v = std::getenv(env); v && *v) {
    std::string_view rest(v);
    while (!rest.empty()) {
      const size_t colon = rest.find(':');
      const std::string dir(rest.substr(0, colon));
      rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
      if (dir.empty()) continue;
      if (!fs::is_directory(dir)) throw UsageError{env, fmt::format("no such folder '{}'", dir)};
      out.push_back({dir, true});
    }
  }
  out.push_back({fs::path(data_dir()) / subdir, false});
  return out;
}

std::vector<SpecEntry> entries(const char* env, const std::string& subdir) {
  std::vector<SpecEntry> out;
  for (const Folder& f : folders(env, subdir)) {
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(f.dir, ec))
      if (e.path().extension() == ".yaml") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const auto& file : files) {
      const std::string id = file.stem().string();
      auto it = std::find_if(out.begin(), out.end(), [&](const SpecEntry& e) { return e.id == id; });
      if (it == out.end()) out.push_back({id, file.string(), f.private_folder, ""});
      else if (!f.private_folder && it->private_file && it->replaces.empty()) it->replaces = file.string();
    }
  }
  std::sort(out.begin(), out.end(), [](const SpecEntry& a, const SpecEntry& b) { return a.id < b.id; });
  return out;
}

std::vector<std::string> ids_of(const std::vector<SpecEntry>& es) {
  std::vector<std::string> ids;
  ids.reserve(es.size());
  for (const auto& e : es) ids.push_back(e.id);
  return ids;
}

bool looks_like_file(const std::string& name) {
  return name.find('/') != std::string::npos || name.ends_with(".yaml") || name.ends_with(".json") ||
         name.ends_with(".yml");
}

/// The entry of an id: `<id>.yaml` in the first folder holding it (no
/// listing: compare resolves a GPU per row), else the one id equal ignoring case.
std::optional<std::string> find_id(const char* env, const std::string& subdir, const std::string& name,
                                   std::vector<SpecEntry>& all) {
  if (name.empty()) return std::nullopt;
  for (const Folder& f : folders(env, subdir))
    if (const fs::path p = f.dir / (name + ".yaml"); fs::exists(p)) return p.string();
  all = entries(env, subdir);
  for (const auto& e : all)
    if (lower(e.id) == lower(name)) return e.path;
  return std::nullopt;
}

/// "unknown GPU 'x' (did you mean 'y'?); known: ..." from the ids and the
/// other names (key as compared -> id) a profile answers to.
[[noreturn]] void unknown(const std::string& flag, const std::string& what, const std::string& name,
                          const std::string& key, const std::vector<SpecEntry>& all,
                          const std::vector<std::pair<std::string, std::string>>& other_names) {
  const std::vector<std::string> ids = ids_of(all);
  std::vector<std::string> prefixed;
  for (const auto& n : ids)
    if (lower(n).rfind(lower(name), 0) == 0) prefixed.push_back(n);
  std::string hint;
  if (prefixed.empty())  // a part of the name: "4090" in rtx_4090
    for (const auto& n : ids)
      if (name.size() >= 3 && lower(n).find(lower(name)) != std::string::npos) prefixed.push_back(n);
  if (prefixed.size() == 1) {
    hint = fmt::format(" (did you mean '{}'?)", prefixed.front());
  } else if (prefixed.size() > 1) {
    hint = fmt::format(" (did you mean one of {}?)", join(prefixed));
  } else if (auto guess = support::closest_match(lower(name), ids); !guess.empty()) {
    hint = fmt::format(" (did you mean '{}'?)", guess);
  } else {
    std::vector<std::string> keys;
    for (const auto& [k, id] : other_names) keys.push_back(k);
    if (auto g = support::closest_match(key, keys); !g.empty())
      for (const auto& [k, id] : other_names)
        if (k == g) {
          hint = fmt::format(" (did you mean '{}'?)", id);
          break;
        }
  }
  throw UsageError{flag, fmt::format("unknown {} '{}'{}; known: {}", what, name, hint, join(ids))};
}

[[noreturn]] void ambiguous(const std::string& flag, const std::string& what, const std::string& name,
                            const std::vector<std::string>& ids) {
  throw UsageError{flag, fmt::format("'{}' names more than one {}: {}; give one of them", name, what, join(ids))};
}

constexpr const char* kProfileEnv = "RIDGELINE_PROFILE_PATH";
constexpr const char* kModelEnv = "RIDGELINE_MODEL_PATH";

}  // namespace

std::vector<SpecEntry> gpu_entries() { return entries(kProfileEnv, "hardware_profiles"); }
std::vector<SpecEntry> model_entries() { return entries(kModelEnv, "models"); }

std::vector<std::string> list_names(const std::string& subdir) {
  return ids_of(subdir == "models" ? model_entries() : subdir == "hardware_profiles"
                                                           ? gpu_entries()
                                                           : entries("", subdir));
}

std::string resolve_gpu_path(const std::string& name) {
  if (looks_like_file(name)) {
    if (!fs::exists(name)) throw support::SpecError({name, 0, 0}, "", "cannot read file: no such file");
    return name;
  }
  std::vector<SpecEntry> all;
  if (auto p = find_id(kProfileEnv, "hardware_profiles", name, all)) return *p;
  // A name sources print: the profile's aliases and display name, normalised.
  const std::string want = spec::normalize_gpu_name(name);
  std::vector<std::pair<std::string, std::string>> names;  // normalised name -> id
  std::vector<std::string> hits;
  std::string hit_path;
  for (const auto& e : all) {
    spec::HardwareSpec hw;
    try {
      hw = spec::load_hardware(e.path);
    } catch (const support::SpecError&) {
      continue;  // a broken profile is reported when it is named
    }
    bool hit = false;
    hw.aliases.push_back(hw.name);
    for (const auto& a : hw.aliases) {
      const std::string n = spec::normalize_gpu_name(a);
      names.emplace_back(n, e.id);
      hit = hit || (!want.empty() && n == want);
    }
    if (hit) hits.push_back(e.id), hit_path = e.path;
  }
  if (hits.size() == 1) {
    // A family name one profile answers to ("A100" is the SXM4 80GB board's
    // alias) also begins other profiles' names: say which was taken.
    std::vector<std::string> others;
    for (const auto& [n, id] : names)
      if (id != hits.front() && n.rfind(want, 0) == 0 &&
          std::find(others.begin(), others.end(), id) == others.end())
        others.push_back(id);
    if (!others.empty())
      std::cerr << fmt::format("note: --gpu {} is taken as {}; also {}: {}\n", name, hits.front(),
                               others.size() == 1 ? "this profile" : "these profiles", join(others));
    return hit_path;
  }
  if (hits.size() > 1) ambiguous("--gpu", "GPU profile", name, hits);
  unknown("--gpu", "GPU", name, want, all, names);
}

std::string resolve_model_path(const std::string& name) {
  if (!name.empty() && fs::is_directory(name)) {
    const fs::path cfg = fs::path(name) / "config.json";
    if (!fs::exists(cfg))
      throw UsageError{"--model", fmt::format("folder '{}' holds no config.json (a Hugging Face model folder "
                                              "does)", name)};
    return cfg.string();
  }
  const bool has_extension = name.ends_with(".yaml") || name.ends_with(".json") || name.ends_with(".yml");
  if (looks_like_file(name) && (fs::exists(name) || has_extension)) {
    if (!fs::exists(name)) throw support::SpecError({name, 0, 0}, "", "cannot read file: no such file");
    return name;
  }
  std::vector<SpecEntry> all;
  if (name.find('/') == std::string::npos)
    if (auto p = find_id(kModelEnv, "models", name, all)) return *p;
  if (all.empty()) all = model_entries();
  // A shipped model's Hub id or display name, ignoring case.
  const std::string want = display_key(name);
  std::vector<std::pair<std::string, std::string>> names;  // key -> id
  std::vector<std::string> hits;
  std::string hit_path;
  for (const auto& e : all) {
    spec::ModelSpec m;
    try {
      m = spec::load_model(e.path);
    } catch (const support::SpecError&) {
      continue;
    }
    bool hit = false;
    for (const std::string& n : {m.hub_id, m.name}) {
      if (n.empty()) continue;
      names.emplace_back(display_key(n), e.id);
      hit = hit || display_key(n) == want;
    }
    if (const size_t slash = m.hub_id.find('/'); slash != std::string::npos)
      names.emplace_back(display_key(m.hub_id.substr(slash + 1)), e.id);  // the repository alone, for suggestions
    if (hit) hits.push_back(e.id), hit_path = e.path;
  }
  if (hits.size() == 1) return hit_path;
  if (hits.size() > 1) ambiguous("--model", "model", name, hits);
  if (const size_t slash = name.find('/'); slash != std::string::npos) {
    // Suggest from the repository part: another owner's upload of the same model.
    std::vector<std::string> keys;
    for (const auto& [k, id] : names) keys.push_back(k);
    std::string hint;
    if (auto g = support::closest_match(display_key(name.substr(name.rfind('/') + 1)), keys); !g.empty())
      for (const auto& [k, id] : names)
        if (k == g) {
          hint = fmt::format(" (did you mean '{}'?)", id);
          break;
        }
    throw UsageError{"--model", fmt::format("'{}' is not a file or folder, nor the Hugging Face id of a shipped "
                                            "model{}; download its config.json and give its folder", name, hint)};
  }
  unknown("--model", "model", name, want, all, names);
}

spec::HardwareSpec resolve_gpu(const std::string& name, const std::vector<std::string>& sets) {
  const std::string path = resolve_gpu_path(name);
  if (sets.empty()) return spec::load_hardware(path);
  return spec::load_hardware_with_overrides(path, field_overrides(sets, SetTarget::kGpu));
}

spec::ModelSpec resolve_model(const std::string& name, const std::vector<std::string>& sets) {
  const std::string path = resolve_model_path(name);
  const auto overrides = sets.empty() ? std::vector<spec::FieldOverride>{} : field_overrides(sets, SetTarget::kModel);
  if (path.ends_with(".json")) return spec::load_hf_config_with_overrides(path, overrides);
  return spec::load_model_with_overrides(path, overrides);
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

namespace {
constexpr std::string_view kFormatWords[] = {"table", "json", "csv", "markdown"};
std::string_view word_of(Format f) { return kFormatWords[static_cast<int>(f)]; }
std::string format_list(std::initializer_list<Format> offered, std::string_view sep) {
  std::string out;
  for (Format f : offered) out += (out.empty() ? "" : std::string(sep)) + std::string(word_of(f));
  return out;
}
}  // namespace

void add_format_and_output(CLI::App& app, std::string& format, std::string& output,
                           std::initializer_list<Format> offered, std::string_view format_note,
                           std::string_view output_help) {
  std::string help = format_list(offered, " | ");
  if (!format_note.empty()) help += " " + std::string(format_note);
  app.add_option("--format", format, help)->capture_default_str();
  app.add_option("--output,-o", output, std::string(output_help));
}

Format parse_format(const std::string& s, std::initializer_list<Format> offered) {
  for (Format f : offered)
    if (s == word_of(f)) return f;
  throw UsageError{"--format", fmt::format("expected one of {}, got \"{}\"", format_list(offered, ", "), s)};
}

int guarded(const std::function<int()>& body) {
  try {
    return body();
  } catch (const support::SpecError& e) {
    for (const auto& d : e.diagnostics()) std::cerr << d.format() << "\n" << d.excerpt();
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

void add_gpu_and_model(CLI::App& app, std::string& gpu, std::string& model) {
  app.add_option("--gpu", gpu, "GPU profile name (see 'ridgeline list gpus') or YAML file")->capture_default_str();
  app.add_option("--model", model, "Model name (see 'ridgeline list models'), YAML file or HF config.json")
      ->capture_default_str();
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
