// The hardware profiles published rows are predicted on, and the lookup
// "which profile is this published GPU name": the name, normalised
// (spec::normalize_gpu_name), against each profile's `aliases`. A name maps
// only to the same part (same die, memory and clocks); a name no profile
// claims maps to none, and its rows are skipped.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ridgeline/spec/hardware.hpp"

namespace ridgeline::validation {

class ProfileSet {
 public:
  /// Every `*.yaml` profile directly in `dir`, in id order. A folder that
  /// cannot be read, or a profile that does not load, throws support::SpecError.
  static ProfileSet load(const std::string& dir);

  explicit ProfileSet(std::vector<spec::HardwareSpec> profiles);

  /// The profile one of whose aliases is `gpu_name` once both are normalised,
  /// or nullptr. Should two profiles claim the name (a copy such as
  /// h100_sxm.calibrated.yaml beside its original), the first in id order wins.
  const spec::HardwareSpec* for_gpu(std::string_view gpu_name) const;

  const std::vector<spec::HardwareSpec>& profiles() const { return profiles_; }

 private:
  std::vector<spec::HardwareSpec> profiles_;  // sorted by id
};

}  // namespace ridgeline::validation
