// The trial's one teardown deadline (see teardown_budget.hpp).
#include "relay/trial/teardown_budget.hpp"

namespace maka_eval::relay {

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
    return left_until(settle_by(now), now);
}

teardown_deadline::clock_type::time_point teardown_deadline::watch_until(clock_type::time_point now) {
    return start(now) - contracts::watch_margin(budget_);
}

} // namespace maka_eval::relay
