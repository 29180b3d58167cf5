// The teardown budget as a promise: one deadline per trial for settling, a recovery and a destroy.
//
// The deadline is started by the first thing that needs it (a cancel, a vanished supervisor) and shared by
// everything after it (the settle, a recovery, a destroy), so the budget is never spent twice. How it is
// split (the destroy reserve, the graces, a recovery's shares) is contracts/teardown_budget.hpp's.
#pragma once

#include "contracts/teardown_budget.hpp"
#include "relay/support/relay_clock.hpp"

#include <chrono>
#include <optional>

namespace maka_eval::relay {

using contracts::destroy_reserve;
using contracts::fit_graces;
using contracts::settle_graces;
using std::chrono::milliseconds;

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
    // Until when watching (not acting) may go on: the end less the watch margin; starts the budget if needed.
    clock_type::time_point watch_until(clock_type::time_point now = clock_type::now());

  private:
    milliseconds budget_;
    std::optional<clock_type::time_point> end_;
};

} // namespace maka_eval::relay
