// The teardown budget (see teardown_budget.hpp).
#include "relay/trial/teardown_budget.hpp"

#include <algorithm>

namespace maka_eval::relay {

milliseconds destroy_reserve(milliseconds budget) {
    return std::min(milliseconds(20'000), budget / 5);
}

settle_graces fit_graces(milliseconds budget, const settle_graces& configured) {
    const auto span = std::max(milliseconds(1), budget - destroy_reserve(budget));
    const auto share = [&](int percent) { return span * percent / 100; };
    return {std::min(configured.term, share(45)), std::min(configured.kill, share(25)),
            std::min(configured.drain, share(10))};
}

teardown_deadline::clock_type::time_point teardown_deadline::start(clock_type::time_point now) {
    if (!end_) {
        end_ = now + budget_;
    }
    return *end_;
}

teardown_deadline::clock_type::time_point teardown_deadline::settle_by(clock_type::time_point now) {
    return start(now) - destroy_reserve(budget_);
}

milliseconds teardown_deadline::settle_left(clock_type::time_point now) {
    const auto left = std::chrono::duration_cast<milliseconds>(settle_by(now) - now);
    return std::max(milliseconds(1), left);
}

} // namespace maka_eval::relay
