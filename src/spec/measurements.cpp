#include "ridgeline/spec/measurements.hpp"

#include <cmath>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ridgeline/spec/yaml_reader.hpp"
#include "ridgeline/support/text.hpp"

namespace ridgeline::spec {

namespace {

const std::vector<std::string>& measurement_dtypes() {
  static const std::vector<std::string> kDtypes = {"fp32", "tf32", "fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "int8",
                                                   "fp64"};
  return kDtypes;
}

using support::join;

/// A bare number of `key` (JSON has no units; the field name carries
/// them), finite and, with `strict`, above 0, else at least 0; `what`
/// describes the number expected in the error ("a number", "a time in
/// seconds such as 1.5e-05").
std::optional<double> number(MapReader& r, const std::string& key, bool required, bool strict, std::string_view what,
                             std::string_view bound) {
  auto s = r.string(key, required);
  if (!s) return std::nullopt;
  double v = 0;
  size_t used = 0;
  try {
    v = std::stod(*s, &used);
  } catch (...) {
    used = 0;
  }
  if (used == 0 || used != s->size() || !std::isfinite(v)) {
    r.error_at(key, fmt::format("expected {}, got \"{}\"", what, *s));
    return std::nullopt;
  }
  if (strict ? v <= 0 : v < 0) {
    r.error_at(key, fmt::format("expected {}, got {}", bound, *s));
    return std::nullopt;
  }
  return v;
}

/// A number that must be finite and >= 0 (sizes, counts, FLOP, bytes).
std::optional<double> non_negative(MapReader& r, const std::string& key, bool required) {
  return number(r, key, required, false, "a number", "a number >= 0");
}

/// A time in seconds that must be > 0.
std::optional<double> positive_time(MapReader& r, const std::string& key, bool required) {
  return number(r, key, required, true, "a time in seconds such as 1.5e-05", "a time greater than zero");
}

/// A word from a list; an unknown word is an error that lists the known ones.
std::optional<std::string> one_of(MapReader& r, const std::string& key, const std::vector<std::string>& known,
                                  const char* what, bool required) {
  auto s = r.string(key, required);
  if (!s) return std::nullopt;
  for (const auto& k : known)
    if (k == *s) return s;
  r.error_at(key, fmt::format("unknown {} '{}'{} (known: {})", what, *s, support::did_you_mean(*s, known), join(known)));
  return std::nullopt;
}

void read_header(MapReader& h, MeasurementHeader& out) {
  static const std::vector<std::string> kBackends = {"cuda", "host"};
  out.backend = one_of(h, "backend", kBackends, "backend", true).value_or("");
  out.device = h.string("device", true).value_or("");
  out.sm_count = static_cast<int>(h.integer("sm_count", false, 0, 1 << 30).value_or(0));
  out.clock_hz = non_negative(h, "clock_hz", false).value_or(0);
  out.memory_clock_hz = non_negative(h, "memory_clock_hz", false).value_or(0);
  out.memory_bytes = non_negative(h, "memory_bytes", false).value_or(0);
  out.driver_version = h.string("driver_version").value_or("");
  out.runtime_version = h.string("runtime_version").value_or("");
  out.date = h.string("date").value_or("");
  out.tool_version = h.string("tool_version").value_or("");
  out.quick = h.boolean("quick").value_or(false);
  h.finish();
}

void read_record(MapReader& r, const std::string& backend, MeasurementRecord& out) {
  static const std::vector<std::string> kChecks = {"pass", "fail", "none"};
  out.line = loc_of(r.file(), r.self()).line;
  out.name = r.string("name", true).value_or("");
  if (auto cls = r.string("class", true)) {
    if (auto c = parse_measurement_class(*cls))
      out.cls = *c;
    else
      r.error_at("class", fmt::format("unknown measurement class '{}'{} (known: {})", *cls,
                                      support::did_you_mean(*cls, measurement_class_names()),
                                      measurement_class_list()));
  }
  out.dtype = one_of(r, "dtype", measurement_dtypes(), "dtype", true).value_or("");
  out.m = non_negative(r, "m", false).value_or(0);
  out.n = non_negative(r, "n", false).value_or(0);
  out.k = non_negative(r, "k", false).value_or(0);
  out.batch = non_negative(r, "batch", false).value_or(1);
  out.elements = non_negative(r, "elements", false).value_or(0);
  out.flops = non_negative(r, "flops", true).value_or(0);
  out.bytes = non_negative(r, "bytes", true).value_or(0);
  out.launches = non_negative(r, "launches", false).value_or(1);
  auto median = positive_time(r, "median_s", true);
  auto min = positive_time(r, "min_s", false);
  out.median_s = median.value_or(0);
  out.min_s = min.value_or(out.median_s);
  if (median && min && *min > *median)
    r.error_at("min_s", fmt::format("expected at most median_s ({}), got {}", *median, *min));
  auto p90 = positive_time(r, "p90_s", false);
  out.p90_s = p90.value_or(0);
  if (median && p90 && *p90 < *median)
    r.error_at("p90_s", fmt::format("expected at least median_s ({}), got {}", *median, *p90));
  out.samples = static_cast<int>(r.integer("samples", false, 0, 1 << 30).value_or(0));
  out.repetitions = static_cast<int>(r.integer("repetitions", false, 1, 1 << 30).value_or(1));
  out.causal = r.boolean("causal").value_or(false);
  out.algorithm = r.string("algorithm").value_or("");
  out.check = one_of(r, "check", kChecks, "check result", false).value_or("none");
  out.sm_clock_hz = non_negative(r, "sm_clock_hz", false).value_or(0);
  out.memory_clock_hz = non_negative(r, "memory_clock_hz", false).value_or(0);
  out.power_w = non_negative(r, "power_w", false).value_or(0);
  out.throttle_reasons = r.string("throttle_reasons").value_or("");
  out.throttled = r.boolean("throttled").value_or(false);
  r.finish();
  const MeasurementClassInfo& info = measurement_class_info(out.cls);
  if (!info.only_backend.empty() && !backend.empty() && backend != info.only_backend)
    r.error_at("class",
               fmt::format("{} records come from the {} backend only, but this file's backend is {}{}", info.name,
                           info.only_backend, backend,
                           out.cls == MeasurementClass::kAttentionFlash
                               ? " (a GPU's tiled CUDA-core kernel is attention_cuda_core; tensor-core attention "
                                 "is attention_sdpa)"
                               : ""));
  if (out.causal && info.shape != RecordShape::kAttention)
    r.error_at("causal", fmt::format("causal applies to attention records only, not {}", info.name));
  switch (info.shape) {
    case RecordShape::kGemm:
      if (out.m <= 0 || out.n <= 0 || out.k <= 0) r.error_here("a gemm record needs m, n and k greater than zero");
      break;
    case RecordShape::kAttention:
      if (out.m <= 0 || out.n <= 0)
        r.error_here("an attention record needs m (sequence) and n (head dim) greater than zero");
      break;
    case RecordShape::kLaunches:
      if (out.launches < 1) r.error_at("launches", "expected at least 1 launch");
      break;
    case RecordShape::kElements:
    case RecordShape::kRowsCols: break;
  }
}

/// An integral value as a JSON integer, anything else as a double.
nlohmann::ordered_json number(double v) {
  if (std::floor(v) == v && std::fabs(v) < 9.0e15) return static_cast<long long>(v);
  return v;
}

}  // namespace

const std::vector<std::string>& measurement_class_names() {
  static const std::vector<std::string> kNames = [] {
    std::vector<std::string> v;
    for (const MeasurementClassInfo& i : kMeasurementClasses) v.emplace_back(i.name);
    return v;
  }();
  return kNames;
}

MeasurementSet load_measurements(const std::string& path) {
  YamlNode root = load_yaml_file(path);
  support::DiagnosticList diags;
  MeasurementSet set;
  set.source_file = path;
  MapReader top(root, path, "", diags);
  if (auto schema = top.string("schema", true); schema && *schema != kMeasurementSchema)
    top.error_at("schema", fmt::format("expected \"{}\", got \"{}\"", kMeasurementSchema, *schema));
  set.header.schema = kMeasurementSchema;
  if (auto h = top.map("header", true)) read_header(*h, set.header);
  YamlNode records = top.sequence("records", true);
  if (records.IsDefined()) {
    if (records.size() == 0) top.error_at("records", "expected at least one record");
    for (size_t i = 0; i < records.size() && !diags.full(); ++i) {
      MapReader r(records[i], path, fmt::format("records[{}]", i), diags);
      if (!r.valid()) continue;
      MeasurementRecord rec;
      read_record(r, set.header.backend, rec);
      set.records.push_back(std::move(rec));
    }
  }
  top.finish();
  diags.throw_if_errors();
  return set;
}

std::string to_json(const MeasurementSet& set) {
  using nlohmann::ordered_json;
  const MeasurementHeader& h = set.header;
  ordered_json header = {{"backend", h.backend},
                         {"device", h.device},
                         {"sm_count", h.sm_count},
                         {"clock_hz", number(h.clock_hz)},
                         {"memory_clock_hz", number(h.memory_clock_hz)},
                         {"memory_bytes", number(h.memory_bytes)},
                         {"driver_version", h.driver_version},
                         {"runtime_version", h.runtime_version},
                         {"date", h.date},
                         {"tool_version", h.tool_version},
                         {"quick", h.quick}};
  std::string out = fmt::format("{{\n  \"schema\": {},\n  \"header\": ", ordered_json(kMeasurementSchema).dump());
  // Invalid UTF-8 in a name (the file is user input) is written as U+FFFD rather than thrown.
  constexpr auto kReplace = nlohmann::ordered_json::error_handler_t::replace;
  std::string head = header.dump(2, ' ', false, kReplace);
  for (char c : head) {
    out.push_back(c);
    if (c == '\n') out += "  ";
  }
  out += ",\n  \"records\": [";
  for (size_t i = 0; i < set.records.size(); ++i) {
    const MeasurementRecord& r = set.records[i];
    ordered_json j = {{"name", r.name},
                      {"class", std::string(name(r.cls))},
                      {"dtype", r.dtype},
                      {"m", number(r.m)},
                      {"n", number(r.n)},
                      {"k", number(r.k)},
                      {"batch", number(r.batch)},
                      {"elements", number(r.elements)},
                      {"flops", number(r.flops)},
                      {"bytes", number(r.bytes)},
                      {"launches", number(r.launches)},
                      {"median_s", r.median_s},
                      {"min_s", r.min_s},
                      {"samples", r.samples},
                      {"algorithm", r.algorithm},
                      {"check", r.check.empty() ? std::string("none") : r.check}};
    // Optional fields only when measured, so files without them keep their form.
    if (r.p90_s > 0) j["p90_s"] = r.p90_s;
    if (r.repetitions != 1) j["repetitions"] = r.repetitions;
    if (r.causal) j["causal"] = true;
    if (r.sm_clock_hz > 0) j["sm_clock_hz"] = number(r.sm_clock_hz);
    if (r.memory_clock_hz > 0) j["memory_clock_hz"] = number(r.memory_clock_hz);
    if (r.power_w > 0) j["power_w"] = number(r.power_w);
    if (!r.throttle_reasons.empty()) j["throttle_reasons"] = r.throttle_reasons;
    if (r.throttled) j["throttled"] = true;
    out += (i ? ",\n    " : "\n    ") + j.dump(-1, ' ', false, kReplace);
  }
  out += set.records.empty() ? "]\n}\n" : "\n  ]\n}\n";
  return out;
}

}  // namespace ridgeline::spec
