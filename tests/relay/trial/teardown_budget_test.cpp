// The teardown budget: graces fitted inside it, one deadline however many steps share it.
#include "relay/trial/teardown_budget.hpp"

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::relay;
using namespace std::chrono_literals;

const settle_graces defaults{20000ms, 10000ms, 2000ms};

TEST_CASE("the default budget keeps the configured graces whole") {
    CHECK(fit_graces(110000ms, defaults) == defaults);
    CHECK(destroy_reserve(110000ms) == 20000ms);
}

TEST_CASE(
    "a 10 s budget fits TERM, KILL and drain inside its 8 s settle span with time left for the report") {
    CHECK(destroy_reserve(10000ms) == 2000ms);
    const auto fitted = fit_graces(10000ms, defaults);
    CHECK(fitted == settle_graces{3600ms, 2000ms, 800ms});
    CHECK(fitted.term + fitted.kill + fitted.drain < 8000ms);
}

TEST_CASE("graces already shorter than their share are left alone") {
    const settle_graces quick{300ms, 500ms, 100ms};
    CHECK(fit_graces(10000ms, quick) == quick);
}

TEST_CASE("the deadline starts once: a recovery after a settle gets what is left, not a fresh budget") {
    teardown_deadline deadline(10000ms);
    CHECK_FALSE(deadline.started());
    const auto t0 = teardown_deadline::clock_type::now();
    const auto end = deadline.start(t0);
    CHECK(end == t0 + 10000ms);
    CHECK(deadline.started());
    CHECK(deadline.start(t0 + 5000ms) == end);             // the second step: the same end
    CHECK(deadline.settle_by(t0 + 5000ms) == t0 + 8000ms); // less the destroy reserve
    CHECK(deadline.settle_left(t0 + 5000ms) == 3000ms);
    CHECK(deadline.settle_left(t0 + 9000ms) == 1ms); // past the span: the smallest usable timeout
}

} // namespace
