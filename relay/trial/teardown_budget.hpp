// The teardown budget as a promise: what settling may take and when everything must be over.
//
// An orchestrator gives a budget (--teardown-timeout-ms) for stopping a cancelled subject. The relay keeps
// one deadline per trial, started by the first thing that needs it (a cancel, a vanished supervisor) and
// shared by everything after it (the settle, a recovery, a destroy), so the budget is never spent twice.
// Settling gets the budget less a destroy reserve; the TERM, KILL and drain graces the helper uses are fitted
// inside that span at the start of the run, so a short budget is met by a short settle, not by a destroy.
#pragma once

#include "relay/support/relay_clock.hpp"

#include <chrono>
#include <optional>

namespace maka_eval::relay {

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

class teardown_deadline {
  public:
    using clock_type = relay_clock;
    explicit teardown_deadline(milliseconds budget) : budget_(budget) {}

    // Starts the budget now unless something started it already; either way, when everything must be over.
    clock_type::time_point start(clock_type::time_point now = clock_type::now());
    [[nodiscard]] bool started() const { return end_.has_value(); }
    // When settling must be over (the end less the destroy reserve); starts the budget if needed.
    clock_type::time_point settle_by(clock_type::time_point now = clock_type::now());
    // What is left of the settle span (at least 1 ms, so a caller always gets a usable timeout).
    milliseconds settle_left(clock_type::time_point now = clock_type::now());

  private:
    milliseconds budget_;
    std::optional<clock_type::time_point> end_;
};

} // namespace maka_eval::relay
