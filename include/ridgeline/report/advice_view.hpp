// Views of an advise::Advice for `ridgeline advise`: the terminal table, the
// JSON document ("ridgeline.advice/1", docs/json.md and
// docs/schemas/advice.schema.json) and Markdown, plus the tables the capacity
// report's "What to change" section lays out. Views read, printers format.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "ridgeline/advise/advise.hpp"
#include "ridgeline/report/capacity_text.hpp"
#include "ridgeline/report/prediction_view.hpp"

namespace ridgeline::report {

/// Where the step goes: the ideal, then each loss with its share and its
/// largest parts; then the step, 100%.
text::Table advice_losses(const advise::Advice& a);
/// The speed suggestions, ranked: change, flags, the loss relieved (time and
/// share of the step), the changed plan's step time, tokens/s, gain and its
/// interval, peak memory and whether it fits.
text::Table advice_speed(const advise::Advice& a);
/// The memory suggestions, ranked: change, flags, what it frees, GiB freed,
/// the new peak, fits, and the step time it costs.
text::Table advice_memory(const advise::Advice& a);
/// "Together (#1 + #2 + #3): --micro-batch 2 --cuda-graphs: 5.41 s, 97.1K tokens/s, +13.2% (+13.9% were
/// they independent)"; "" when fewer than two suggestions combine.
std::string advice_combined_line(const advise::Advice& a);
/// "peak 61.3 GiB of 79.6 GiB (77.0%), activations the largest (38.1 GiB)".
std::string advice_memory_line(const advise::Advice& a);

/// Without `wide`, the speed table leaves out what each change relieves and
/// its loss (the step table above shows both), the memory table what each
/// change frees, and the step table names each loss's largest part only,
/// so the text keeps to 120 columns.
std::string advice_table(const advise::Advice& a, const Inputs& in, bool wide = true);
nlohmann::json advice_json(const advise::Advice& a, const Inputs& in);
std::string advice_markdown(const advise::Advice& a, const Inputs& in);

}  // namespace ridgeline::report
