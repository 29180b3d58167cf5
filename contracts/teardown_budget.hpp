// The teardown budget's arithmetic, every share of it in one place, for both binaries.
//
// An orchestrator gives a budget (--teardown-timeout-ms) for stopping a cancelled subject. The relay keeps
// one deadline per trial (relay/trial/teardown_budget.hpp) and splits it here: settling gets the budget less
// a destroy reserve, with the TERM, KILL and drain graces fitted inside that span; a recovery (the helper
// vanished) asks the engine for part of what is left, refreshes the helper with a part of the rest, and
// watches a stopped container for a restart into the reserve (a stopped container is never destroyed);
// the helper's own `cancel` sends TERM for its share of the grace it is given, then KILL.
#pragma once

#include <chrono>

namespace maka_eval::contracts {

using std::chrono::milliseconds;

// What is kept back for a destroy when settling does not finish: min(20 s, 20 %).
[[nodiscard]] milliseconds destroy_reserve(milliseconds budget);

struct settle_graces {
    milliseconds term{0};
    milliseconds kill{0};
    milliseconds drain{0};
    [[nodiscard]] bool operator==(const settle_graces&) const = default;
};

// The configured graces, each capped to its share of the settle span (budget less the destroy reserve):
// TERM 45 %, KILL 25 %, drain 10 %, leaving a fifth of the span for the report to arrive. A budget large
// enough for the configured graces leaves them as they are.
[[nodiscard]] settle_graces fit_graces(milliseconds budget, const settle_graces& configured);

// How long before the budget's end watching may go on (a stopped container, for a restart): half the
// destroy reserve, which is left for the report and for a destroy should the engine have stalled.
[[nodiscard]] milliseconds watch_margin(milliseconds budget);

// A recovery, from what is left of the settle span: an engine that does not answer, or a paused container,
// is asked again for half of it; a fresh copy of the helper may take a third of what the asking left.
[[nodiscard]] milliseconds recovery_diagnosis_share(milliseconds settle_left);
[[nodiscard]] milliseconds recovery_upload_share(milliseconds settle_left);
// How long a container seen stopped is watched for coming back (`docker restart` stops it first: only its
// start tells a restart from a stop), within the watch span.
inline constexpr milliseconds restart_window{3000};

// The helper's `cancel --grace-ms N`: TERM to the scope for this share of N, then KILL.
[[nodiscard]] milliseconds cancel_term_share(milliseconds grace);

} // namespace maka_eval::contracts
