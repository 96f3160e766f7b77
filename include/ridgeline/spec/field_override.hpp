// A field of a spec file set from outside the file (the command line's
// `--set gpu.memory.hbm_bandwidth="4.8 TB/s"`). The loaders put the value into
// the parsed document before reading it, so it is validated exactly as the
// field written in the file would be; a diagnostic about it names the
// override (`--set gpu.memory.hbm_bandwidth: ...`) instead of a file position.
#pragma once

#include <string>

namespace ridgeline::spec {

struct FieldOverride {
  std::string field;  // dotted path inside the file: "memory.hbm_bandwidth"
  std::string value;  // the text the file would hold there: "4.8 TB/s"
  std::string label;  // what a diagnostic about it names: "--set gpu.memory.hbm_bandwidth"
};

}  // namespace ridgeline::spec
