#include "harness/suite.hpp"

#include "harness/check.hpp"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>

namespace ridgeline::cuda_bench {

namespace {

volatile std::sig_atomic_t g_stop = 0;

double now_s() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double>(clock::now().time_since_epoch()).count();
}

}  // namespace

void request_stop() noexcept { g_stop = 1; }
bool stop_requested() noexcept { return g_stop != 0; }

std::string format_seconds(double s) {
  char buf[32];
  if (s >= 1.0)
    std::snprintf(buf, sizeof buf, "%.3f s", s);
  else if (s >= 1e-3)
    std::snprintf(buf, sizeof buf, "%.3f ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.2f us", s * 1e6);
  return buf;
}

std::string format_bytes(double bytes) {
  char buf[32];
  if (bytes >= 1024.0 * 1024.0 * 1024.0)
    std::snprintf(buf, sizeof buf, "%.4g GiB", bytes / (1024.0 * 1024.0 * 1024.0));
  else if (bytes >= 1024.0 * 1024.0)
    std::snprintf(buf, sizeof buf, "%.4g MiB", bytes / (1024.0 * 1024.0));
  else
    std::snprintf(buf, sizeof buf, "%.4g KiB", bytes / 1024.0);
  return buf;
}

void CheckResult::compare(double got, double want, double allowed) {
  ++compared;
  double error = std::fabs(got - want);
  if (std::isnan(error)) error = INFINITY;
  if (!(error <= allowed)) ++failed;
  double ratio = allowed > 0.0 ? error / allowed : (error > 0.0 ? INFINITY : 0.0);
  if (compared == 1 || ratio > worst_ratio) {
    worst_ratio = ratio;
    worst_error = error;
    worst_allowed = allowed;
  }
}

void CheckResult::merge(const CheckResult& other) {
  if (other.compared == 0) return;
  if (compared == 0 || other.worst_ratio > worst_ratio) {
    worst_ratio = other.worst_ratio;
    worst_error = other.worst_error;
    worst_allowed = other.worst_allowed;
  }
  compared += other.compared;
  failed += other.failed;
}

Suite::Suite(const DeviceInfo& device, bool quick) : device_(device), quick_(quick), start_s_(now_s()) {
  RIDGELINE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  monitor_ = std::make_unique<NvmlMonitor>(device_.ordinal);
  if (!monitor_->available())
    progress("NVML not available (" + monitor_->unavailable_reason() +
             "): records go without clocks, power and throttle reasons");
  flusher_ = std::make_unique<L2Flusher>(device_.l2_bytes);
  gate_ = std::make_unique<StreamGate>();
  timer_ = std::make_unique<EventTimer>(*flusher_, *gate_, *monitor_, stream_);
}

Suite::~Suite() {
  timer_.reset();
  gate_.reset();
  flusher_.reset();
  monitor_.reset();
  if (lt_workspace_ != nullptr) (void)cudaFree(lt_workspace_);
  if (lt_ != nullptr) (void)cublasLtDestroy(lt_);
  if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
}

cublasLtHandle_t Suite::lt_handle() {
  if (lt_ == nullptr) RIDGELINE_CUBLAS_CHECK(cublasLtCreate(&lt_));
  return lt_;
}

void* Suite::lt_workspace() {
  if (lt_workspace_ == nullptr) RIDGELINE_CUDA_CHECK(cudaMalloc(&lt_workspace_, kLtWorkspaceBytes));
  return lt_workspace_;
}

TimingOptions Suite::default_options() const {
  TimingOptions options;
  options.min_samples = samples();
  options.max_samples = quick_ ? 200 : 1000;
  options.min_time_s = quick_ ? 0.02 : 0.1;
  options.max_wall_s = quick_ ? 1.5 : 5.0;
  return options;
}

Timing Suite::time(const std::function<void(cudaStream_t)>& run, TimingOptions options) {
  return timer_->measure(run, options);
}

void Suite::progress(const std::string& text) const {
  std::fprintf(stderr, "[%7.1f s] %s\n", now_s() - start_s_, text.c_str());
}

void Suite::skip(const std::string& name, const std::string& reason) {
  ++skipped_;
  progress("skip " + name + ": " + reason);
}

void Suite::run_case(const std::string& name, const std::function<void()>& body) {
  if (stop_requested()) throw Stopped("stop requested before " + name);
  try {
    body();
  } catch (const Skip& s) {
    skip(name, s.what());
  } catch (const CudaError& e) {
    ++failed_;
    progress("FAILED " + name + ": " + e.what());
    (void)cudaGetLastError();
    if (cudaDeviceSynchronize() != cudaSuccess || cudaGetLastError() != cudaSuccess)
      throw DeviceLost("the device is unusable after " + name + " failed");
  } catch (const DeviceLost&) {
    throw;
  } catch (const Stopped&) {
    throw;
  } catch (const std::exception& e) {  // host-side trouble (out of host memory, ...)
    ++failed_;
    progress("FAILED " + name + ": " + e.what());
  }
}

bool Suite::wants(spec::MeasurementClass cls) const {
  return class_filter_.empty() || std::find(class_filter_.begin(), class_filter_.end(), cls) != class_filter_.end();
}

void Suite::add(Record record, const Timing& timing, const CheckResult& check) {
  if (!wants(record.cls)) return;
  record.check = check.verdict();
  if (check.failed > 0) {
    ++check_failures_;
    char detail[320];
    std::snprintf(detail, sizeof detail, "check FAILED for %s: %d of %d sampled outputs out of tolerance (worst |error| %.3g, allowed %.3g)",
                  record.name.c_str(), check.failed, check.compared, check.worst_error, check.worst_allowed);
    progress(detail);
  }
  add(std::move(record), timing);
}

void Suite::add(Record record, const Timing& timing) {
  if (!wants(record.cls)) return;
  record.median_s = timing.median_s;
  record.min_s = timing.min_s;
  record.p90_s = timing.p90_s;
  record.samples = timing.samples;
  record.repetitions = timing.repetitions;
  record.state = timing.state;
  if (!(timing.samples > 0 && std::isfinite(timing.median_s) && timing.median_s > 0.0 && std::isfinite(timing.min_s) &&
        timing.min_s > 0.0)) {
    ++failed_;
    progress("FAILED " + record.name + ": no valid timing (median " + std::to_string(timing.median_s) + " s)");
    return;
  }
  std::string line = record.name + ": median " + format_seconds(record.median_s) + " (min " +
                     format_seconds(record.min_s) + ", p90 " + format_seconds(record.p90_s) + ", " +
                     std::to_string(record.samples) + " samples" +
                     (record.repetitions > 1 ? " of " + std::to_string(record.repetitions) + " runs" : "") + ")";
  char buf[64];
  if (record.flops > 0.0) {
    std::snprintf(buf, sizeof buf, ", %.1f TFLOP/s", record.flops / record.median_s / 1e12);
    line += buf;
  }
  if (record.bytes > 0.0) {
    std::snprintf(buf, sizeof buf, ", %.1f GB/s", record.bytes / record.median_s / 1e9);
    line += buf;
  }
  if (spec::measurement_class_info(record.cls).shape == spec::RecordShape::kLaunches) {
    std::snprintf(buf, sizeof buf, ", %.2f us per launch", 1e6 * record.median_s / static_cast<double>(record.launches));
    line += buf;
  }
  line += ", check " + record.check;
  if (record.state.read) {
    std::snprintf(buf, sizeof buf, ", SM %.0f MHz, %.0f W", record.state.sm_clock_hz / 1e6, record.state.power_w);
    line += buf;
  }
  if (record.state.throttled) line += ", THROTTLED (" + record.state.reason_text() + ")";
  progress(line);
  records_.push_back(std::move(record));
  if (on_record_) on_record_(records_);
}

}  // namespace ridgeline::cuda_bench
