#include "harness/measurement_file.hpp"

#include "harness/json_writer.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace ridgeline::cuda_bench {

std::string measurements_json(const DeviceInfo& device, bool quick, const std::string& date_iso8601,
                              const std::string& tool_version, const std::vector<Record>& records) {
  JsonWriter w;
  w.begin_object();
  w.field("schema", kMeasurementSchema);
  w.key("header");
  w.begin_object();
  w.field("backend", "cuda");
  w.field("device", device.name);
  w.field("sm_count", device.sm_count);
  w.field("clock_hz", device.clock_hz);
  w.field("memory_clock_hz", device.memory_clock_hz);
  w.field("memory_bytes", device.memory_bytes);
  w.field("driver_version", std::to_string(device.driver_version));
  w.field("runtime_version", std::to_string(device.runtime_version));
  w.field("date", date_iso8601);
  w.field("tool_version", tool_version);
  w.field("quick", quick);
  w.end_object();
  w.key("records");
  w.begin_array();
  for (const Record& r : records) {
    w.begin_object(/*compact=*/true);
    w.field("name", r.name);
    w.field("class", spec::name(r.cls));
    w.field("dtype", r.dtype);
    w.field("m", r.m);
    w.field("n", r.n);
    w.field("k", r.k);
    w.field("batch", r.batch);
    w.field("elements", r.elements);
    w.field("flops", r.flops);
    w.field("bytes", r.bytes);
    w.field("launches", r.launches);
    w.field("median_s", r.median_s);
    w.field("min_s", r.min_s);
    w.field("samples", r.samples);
    w.field("algorithm", r.algorithm);
    w.field("check", r.check);
    if (r.p90_s > 0.0) w.field("p90_s", r.p90_s);
    if (r.repetitions != 1) w.field("repetitions", r.repetitions);
    if (r.causal) w.field("causal", true);
    if (r.state.read) {
      w.field("sm_clock_hz", r.state.sm_clock_hz);
      w.field("memory_clock_hz", r.state.memory_clock_hz);
      if (r.state.power_w > 0.0) w.field("power_w", r.state.power_w);
      if (r.state.reasons != 0) w.field("throttle_reasons", r.state.reason_text());
      if (r.state.throttled) w.field("throttled", true);
    }
    w.end_object();
  }
  w.end_array();
  w.end_object();
  return w.str();
}

std::string temp_path(const std::string& path) { return path + ".tmp." + std::to_string(getpid()); }

bool write_atomically(const std::string& path, const std::string& text) {
  std::string tmp = temp_path(path);
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) {
    std::fprintf(stderr, "ridgeline_cuda_bench: cannot write %s: %s\n", tmp.c_str(), std::strerror(errno));
    return false;
  }
  bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  ok = std::fflush(f) == 0 && ok;
  ok = fsync(fileno(f)) == 0 && ok;
  ok = std::fclose(f) == 0 && ok;
  if (ok && std::rename(tmp.c_str(), path.c_str()) != 0) ok = false;
  if (!ok) {
    std::fprintf(stderr, "ridgeline_cuda_bench: cannot write %s: %s\n", path.c_str(), std::strerror(errno));
    std::remove(tmp.c_str());
  }
  return ok;
}

}  // namespace ridgeline::cuda_bench
