#include "ridgeline/validation/profiles.hpp"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include "ridgeline/support/diagnostics.hpp"

namespace ridgeline::validation {

namespace fs = std::filesystem;

ProfileSet ProfileSet::load(const std::string& dir) {
  std::vector<std::string> paths;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".yaml") paths.push_back(e.path().string());
  if (ec) throw support::SpecError({dir, 0, 0}, "", "cannot read the hardware profile folder: " + ec.message());
  std::vector<spec::HardwareSpec> profiles;
  for (const auto& p : paths) profiles.push_back(spec::load_hardware(p));
  return ProfileSet(std::move(profiles));
}

ProfileSet::ProfileSet(std::vector<spec::HardwareSpec> profiles) : profiles_(std::move(profiles)) {
  std::stable_sort(profiles_.begin(), profiles_.end(),
                   [](const spec::HardwareSpec& a, const spec::HardwareSpec& b) { return a.id < b.id; });
}

const spec::HardwareSpec* ProfileSet::for_gpu(std::string_view gpu_name) const {
  const std::string n = spec::normalize_gpu_name(gpu_name);
  if (n.empty()) return nullptr;
  for (const auto& hw : profiles_)
    for (const auto& a : hw.aliases)
      if (spec::normalize_gpu_name(a) == n) return &hw;
  return nullptr;
}

}  // namespace ridgeline::validation
