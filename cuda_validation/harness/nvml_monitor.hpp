// The device's state while a case is measured, from NVML: SM and memory
// clocks (Hz), board power (W) and the reasons the clock was held down.
//
// NVML is the driver's library (libnvidia-ml.so.1), not the toolkit's: it is
// opened at run time with dlopen, so the suite builds where the toolkit has no
// nvml.h or stub library (this project's CI) and runs without NVML where the
// driver lacks it (the state is then left unread and says so). The few entry
// points used are declared here with the C ABI nvml.h gives them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ridgeline::cuda_bench {

struct DeviceState {
  bool read = false;             // NVML answered at least once
  double sm_clock_hz = 0.0;      // median of the readings
  double memory_clock_hz = 0.0;  // median of the readings
  double power_w = 0.0;          // median of the readings
  std::uint64_t reasons = 0;     // OR of the clocks-event reasons seen (GPU idle left out)
  bool throttled = false;        // a power, thermal or hardware slowdown reason was seen
  /// "sw_power_cap+hw_slowdown"; "" when none.
  std::string reason_text() const;
};

/// Reasons that mean the clock was held below what the workload asked for.
/// Values from nvml.h (nvmlClocksEventReason*): SwPowerCap 0x4, HwSlowdown 0x8,
/// SwThermalSlowdown 0x20, HwThermalSlowdown 0x40, HwPowerBrakeSlowdown 0x80.
inline constexpr std::uint64_t kSlowdownReasons = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

class NvmlMonitor {
 public:
  /// Opens NVML for the CUDA device `ordinal` (matched by PCI bus id).
  explicit NvmlMonitor(int ordinal);
  ~NvmlMonitor();
  NvmlMonitor(const NvmlMonitor&) = delete;
  NvmlMonitor& operator=(const NvmlMonitor&) = delete;

  bool available() const { return device_ != nullptr; }
  /// Why NVML is not available ("" when it is).
  const std::string& unavailable_reason() const { return why_; }

  void begin();   // forget earlier readings
  void sample();  // one reading of clocks, power and reasons
  DeviceState end();
  /// One reading now, outside any case (for the run's start and end).
  DeviceState now();

 private:
  void* lib_ = nullptr;
  void* device_ = nullptr;
  std::string why_;
  std::vector<double> sm_, mem_, power_;
  std::uint64_t reasons_ = 0;
  // Entry points (nvmlReturn_t is an int; NVML_SUCCESS = 0).
  int (*clock_info_)(void*, int, unsigned*) = nullptr;
  int (*power_usage_)(void*, unsigned*) = nullptr;
  int (*reasons_fn_)(void*, unsigned long long*) = nullptr;
  int (*shutdown_)() = nullptr;
};

}  // namespace ridgeline::cuda_bench
