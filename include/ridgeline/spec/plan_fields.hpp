// The plan's fields, each defined once: its YAML key, CLI flag, help text,
// accepted values, where it lives in PlanSpec and how it prints. The YAML plan
// loader, the CLI flags and their --help, compare --vary / search --fix
// settings, the JSON "plan" object and every one-line plan summary (predict's
// header, search rows, capacity reports, published-row descriptions) are
// driven by this table. Adding a plan field is one entry here plus its effect.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "ridgeline/spec/plan.hpp"
#include "ridgeline/units/units.hpp"

namespace ridgeline::spec {

enum class FieldType : std::uint8_t { kInt, kBool, kNumber, kQuantity, kWord };

/// Where a field shows in a one-line summary: technique fields are joined by
/// ", " ("bf16, flash2 attention"), layout fields by " " ("TP8 PP4 DP16").
enum class SummaryGroup : std::uint8_t { kNone, kTechnique, kLayout };

/// When a summary shows a field: always, or only when it differs from the default.
enum class Show : std::uint8_t { kAlways, kIfChanged, kNever };

/// Which stage of an evaluation reads a field, outermost last. The search
/// (search::axes) enumerates a searched field's values at its scope's level
/// and shares what the inner levels form across them:
///   kGraph:  the micro-batch graph's kernels or their costs (TP,
///            micro-batch, precision, recomputation, the power limit, CUDA
///            graphs, ...): one graph per value;
///   kLayout: which layers each pipeline stage holds (PP, uneven stages):
///            the graph is rebuilt per value, its kernels' costs are shared
///            (engine::CostMemo);
///   kStep:   the step around the micro-batches (virtual stages, ZeRO,
///            offload): the schedule, model state and optimizer read it, the
///            micro-batch graph and its summary do not;
///   kRun:    the training run beyond one step (tokens, failures,
///            checkpoints, energy).
/// Every field states one (plan_fields_test checks that a step or run field
/// leaves the micro-batch graph alone, and a run field the step too).
/// kNone: not stated.
enum class Scope : std::uint8_t { kNone, kGraph, kLayout, kStep, kRun };

struct PlanField {
  std::string_view key;      // YAML path: "micro_batch", "parallel.tp", "optimizer.kind"
  std::string_view setting;  // short key for --vary / --fix ("tp", "lora_rank"); the key works too
  std::string_view flag;     // CLI flag without the dashes ("micro-batch"); a bool gets --no-<flag> too
  std::string_view help;     // for --help; a word field's choices and every default are appended
  FieldType type = FieldType::kInt;
  double lo = 0, hi = 0;                       // kInt, kNumber: the accepted range
  units::Dimension dim = units::Dimension::kCount;  // kQuantity
  // Storage, by type (exactly one is set).
  int& (*int_ref)(PlanSpec&) = nullptr;
  bool& (*bool_ref)(PlanSpec&) = nullptr;
  double& (*num_ref)(PlanSpec&) = nullptr;
  /// kWord: reads a word into the plan (false: not one of the words).
  bool (*parse_word)(PlanSpec&, std::string_view) = nullptr;
  /// kWord: the word the plan holds.
  std::string (*word)(const PlanSpec&) = nullptr;
  std::string (*choices)() = nullptr;          // kWord: "a, b, c"
  /// Whether the field means anything for this plan (fp8 recipe without fp8: no).
  bool (*applies)(const PlanSpec&) = nullptr;  // nullptr: always
  SummaryGroup group = SummaryGroup::kNone;
  Show show = Show::kNever;
  /// The value in a summary: "TP{}", "{} attention", "+SP" (bools). A
  /// leading space joins it to the item before ("lora r=16 on q,v").
  std::string_view summary = "{}";
  /// YAML only: the parent key may hold this field's value as a plain word
  /// ("optimizer: adamw" for optimizer.kind).
  bool shorthand = false;
  /// The stage that reads it, outermost; stated for every field.
  Scope scope = Scope::kNone;
};

/// Every plan field, in the order summaries, JSON and --help list them.
std::span<const PlanField> plan_fields();

/// A field by its YAML key or its setting key; nullptr when there is none.
const PlanField* find_plan_field(std::string_view key);

/// Reads `text` into the plan: "" on success, else the message (without the
/// field name), worded as the YAML loader words it ("expected a whole number
/// from 1 to 4096, got 0").
std::string set_field(const PlanField& f, PlanSpec& p, std::string_view text);

/// The value in the spelling set_field reads ("8", "true", "bf16", "15T").
std::string field_text(const PlanField& f, const PlanSpec& p);

/// Whether the plan holds the field's default value.
bool is_default(const PlanField& f, const PlanSpec& p);

bool applies(const PlanField& f, const PlanSpec& p);

/// Whether the plan runs under the default framework without naming it
/// where that default is doubtful: a LoRA or QLoRA fine-tune on one GPU,
/// which is more often a Hugging Face PEFT run (--framework hf) than a
/// Megatron-LM one. Its summary then says "megatron (assumed: no --framework)".
bool framework_assumed(const PlanSpec& p);

/// The field as a summary shows it ("TP8", "flash2 attention", "+SP"); ""
/// when its Show rule hides it for this plan (the framework marked when
/// framework_assumed).
std::string summary_text(const PlanField& f, const PlanSpec& p);

/// The field in its summary form whatever its Show rule ("mb2", "TP8").
std::string field_summary(const PlanField& f, const PlanSpec& p);

/// The plan in one line: technique fields joined by ", ", then the layout
/// fields joined by " " ("bf16, flash2 attention, fusion fused, recompute
/// selective, adamw, TP8 PP4 DP16 +SP ZeRO-1").
std::string plan_summary(const PlanSpec& p);
/// One group's part of plan_summary.
std::string summary_line(const PlanSpec& p, SummaryGroup g);
/// The named fields (YAML or setting keys) in summary form, joined by `sep`.
std::string summary_of(const PlanSpec& p, std::initializer_list<std::string_view> keys,
                       std::string_view sep = " ");


}  // namespace ridgeline::spec
