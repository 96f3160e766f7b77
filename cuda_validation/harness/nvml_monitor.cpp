#include "harness/nvml_monitor.hpp"

#include "harness/timer.hpp"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

namespace ridgeline::cuda_bench {

namespace {

// nvml.h: nvmlClockType_t NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2.
constexpr int kClockSm = 1;
constexpr int kClockMem = 2;
// nvml.h: nvmlClocksEventReasonGpuIdle.
constexpr std::uint64_t kGpuIdle = 0x1;

struct ReasonName {
  std::uint64_t bit;
  const char* name;
};
// nvml.h's nvmlClocksEventReason* bits, as the record spells them.
constexpr ReasonName kReasonNames[] = {
    {0x2, "applications_clocks_setting"}, {0x4, "sw_power_cap"},        {0x8, "hw_slowdown"},
    {0x10, "sync_boost"},                  {0x20, "sw_thermal_slowdown"}, {0x40, "hw_thermal_slowdown"},
    {0x80, "hw_power_brake_slowdown"},     {0x100, "display_clock_setting"},
};

}  // namespace

std::string DeviceState::reason_text() const {
  std::string s;
  for (const ReasonName& r : kReasonNames)
    if (reasons & r.bit) s += (s.empty() ? "" : "+") + std::string(r.name);
  return s;
}

NvmlMonitor::NvmlMonitor(int ordinal) {
  lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib_ == nullptr) {
    why_ = "libnvidia-ml.so.1 not found";
    return;
  }
  auto sym = [&](const char* name) { return dlsym(lib_, name); };
  auto init = reinterpret_cast<int (*)()>(sym("nvmlInit_v2"));
  auto by_bus = reinterpret_cast<int (*)(const char*, void**)>(sym("nvmlDeviceGetHandleByPciBusId_v2"));
  clock_info_ = reinterpret_cast<int (*)(void*, int, unsigned*)>(sym("nvmlDeviceGetClockInfo"));
  power_usage_ = reinterpret_cast<int (*)(void*, unsigned*)>(sym("nvmlDeviceGetPowerUsage"));
  // Renamed from "throttle" to "clocks event" in CUDA 12.2's NVML; same signature and bits.
  reasons_fn_ = reinterpret_cast<int (*)(void*, unsigned long long*)>(sym("nvmlDeviceGetCurrentClocksEventReasons"));
  if (reasons_fn_ == nullptr)
    reasons_fn_ =
        reinterpret_cast<int (*)(void*, unsigned long long*)>(sym("nvmlDeviceGetCurrentClocksThrottleReasons"));
  shutdown_ = reinterpret_cast<int (*)()>(sym("nvmlShutdown"));
  if (init == nullptr || by_bus == nullptr || clock_info_ == nullptr || shutdown_ == nullptr) {
    why_ = "libnvidia-ml.so.1 lacks nvmlInit_v2, nvmlDeviceGetHandleByPciBusId_v2 or nvmlDeviceGetClockInfo";
    return;
  }
  if (int rc = init(); rc != 0) {
    why_ = "nvmlInit_v2 returned " + std::to_string(rc);
    shutdown_ = nullptr;
    return;
  }
  char bus[32] = {};
  if (cudaDeviceGetPCIBusId(bus, sizeof bus, ordinal) != cudaSuccess) {
    why_ = "cudaDeviceGetPCIBusId failed";
    return;
  }
  if (int rc = by_bus(bus, &device_); rc != 0) {
    device_ = nullptr;
    why_ = std::string("nvmlDeviceGetHandleByPciBusId_v2(") + bus + ") returned " + std::to_string(rc);
  }
}

NvmlMonitor::~NvmlMonitor() {
  if (shutdown_ != nullptr) shutdown_();
  if (lib_ != nullptr) dlclose(lib_);
}

void NvmlMonitor::begin() {
  sm_.clear();
  mem_.clear();
  power_.clear();
  reasons_ = 0;
}

void NvmlMonitor::sample() {
  if (device_ == nullptr) return;
  unsigned v = 0;
  if (clock_info_(device_, kClockSm, &v) == 0) sm_.push_back(1e6 * v);  // MHz
  if (clock_info_(device_, kClockMem, &v) == 0) mem_.push_back(1e6 * v);
  if (power_usage_ != nullptr && power_usage_(device_, &v) == 0) power_.push_back(1e-3 * v);  // mW
  unsigned long long r = 0;
  if (reasons_fn_ != nullptr && reasons_fn_(device_, &r) == 0) reasons_ |= r & ~kGpuIdle;
}

DeviceState NvmlMonitor::end() {
  DeviceState s;
  s.read = !sm_.empty();
  s.sm_clock_hz = median(sm_);
  s.memory_clock_hz = median(mem_);
  s.power_w = median(power_);
  s.reasons = reasons_;
  s.throttled = (reasons_ & kSlowdownReasons) != 0;
  return s;
}

DeviceState NvmlMonitor::now() {
  begin();
  sample();
  DeviceState s = end();
  begin();
  return s;
}

}  // namespace ridgeline::cuda_bench
