// The clock the trial keeps its deadlines by: the steady clock, which a test may move forward.
//
// The trial's bounds are long (a 110 s teardown budget, a 120 s wait for `hello`, three missed heartbeats):
// testing what happens when one runs out must not take that long. Every deadline of the trial, its event
// queue and its teardown budget is read from this clock and waited for on `relay_timer`; a test moves the
// clock with `advance` and every pending wait re-checks its deadline within a millisecond of real time.
// Nothing in the relay itself ever moves it: unmoved, it is `steady_clock` and a timer waits as long as its
// deadline says.
#pragma once

#include <algorithm>
#include <chrono>

#include <boost/asio/basic_waitable_timer.hpp>

namespace maka_eval::relay {

struct relay_clock {
    using duration = std::chrono::steady_clock::duration;
    using rep = duration::rep;
    using period = duration::period;
    using time_point = std::chrono::time_point<relay_clock>;
    static constexpr bool is_steady = true;

    static time_point now() noexcept {
        return time_point(std::chrono::steady_clock::now().time_since_epoch() + moved_);
    }
    // Tests only: every later reading is `by` later. One thread (the trial's) reads and moves it.
    static void advance(duration by) noexcept { moved_ += by; }
    [[nodiscard]] static bool moved() noexcept { return moved_ != duration::zero(); }

  private:
    static inline duration moved_{};
};

// While the clock has been moved, a wait lasts at most 1 ms of real time before its deadline is read again
// (the clock may have been moved past it meanwhile); unmoved, a wait is exactly its deadline.
struct relay_wait_traits {
    static relay_clock::duration to_wait_duration(const relay_clock::duration& d) {
        constexpr relay_clock::duration recheck = std::chrono::milliseconds(1);
        return relay_clock::moved() && d > recheck ? recheck : d;
    }
    static relay_clock::duration to_wait_duration(const relay_clock::time_point& t) {
        return to_wait_duration(t - relay_clock::now());
    }
};

using relay_timer = boost::asio::basic_waitable_timer<relay_clock, relay_wait_traits>;

// What is left until `deadline` on the relay clock, at least 1 ms: a timeout whoever gets it can still use.
[[nodiscard]] inline std::chrono::milliseconds left_until(relay_clock::time_point deadline,
                                                          relay_clock::time_point now = relay_clock::now()) {
    return std::max(std::chrono::milliseconds(1),
                    std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now));
}

} // namespace maka_eval::relay
