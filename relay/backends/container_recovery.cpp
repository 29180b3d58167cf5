// The docker backend's recovery (see container_recovery.hpp).
#include "relay/backends/container_recovery.hpp"

#include "contracts/teardown_budget.hpp"
#include "relay/support/relay_clock.hpp"

#include <algorithm>
#include <optional>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace maka_eval::relay {
namespace {

using namespace boost::asio::experimental::awaitable_operators;
using boost::asio::as_tuple;
using boost::asio::use_awaitable;
using std::chrono::milliseconds;

// How often the engine is asked again while the answer may still change.
constexpr milliseconds diagnosis_interval{250};

asio::awaitable<void> sleep_until(relay_clock::time_point until) {
    relay_timer timer(co_await asio::this_coro::executor, until);
    co_await timer.async_wait(as_tuple(use_awaitable));
}

// One diagnosis, or engine_unreachable once `until` passes without an answer.
asio::awaitable<container_diagnosis> diagnose_by(const recovery_steps& steps, relay_clock::time_point until) {
    auto raced = co_await (steps.diagnose() || sleep_until(until));
    if (raced.index() == 1) {
        co_return container_diagnosis{container_condition::engine_unreachable,
                                      "the engine did not answer the inspect in time"};
    }
    co_return std::get<0>(std::move(raced));
}

// Until when each reading of the container is asked again, because it may still change.
struct asking_bounds {
    relay_clock::time_point unreachable_or_paused; // an engine that does not answer, a paused container
    relay_clock::time_point running;               // after a failed cancel: a container being killed
    relay_clock::time_point watch;                 // a stopped one: the restart window ends within this
};

// The container's condition once it stops changing, or when its reading's bound has passed; a stopped one
// is watched for the restart window from when it was first seen stopped.
asio::awaitable<container_diagnosis> settled_diagnosis(const recovery_steps& steps, asking_bounds bounds) {
    std::optional<relay_clock::time_point> seen_stopped;
    while (true) {
        const auto answer_by = seen_stopped ? bounds.watch
                                            : std::max({bounds.unreachable_or_paused, bounds.running,
                                                        relay_clock::now() + diagnosis_interval});
        auto d = co_await diagnose_by(steps, answer_by);
        const auto now = relay_clock::now();
        auto until = now; // by default: this answer is final
        switch (d.condition) {
        case container_condition::engine_unreachable:
        case container_condition::paused:
            until = bounds.unreachable_or_paused;
            break;
        case container_condition::running:
        case container_condition::memory_killed:
            until = bounds.running;
            break;
        case container_condition::stopped:
            seen_stopped = seen_stopped.value_or(now);
            until = std::min(*seen_stopped + contracts::restart_window, bounds.watch);
            break;
        default:
            break;
        }
        if (now + diagnosis_interval >= until) {
            co_return d;
        }
        co_await sleep_until(now + diagnosis_interval);
    }
}

} // namespace

std::optional<recovery> recovery_of(container_condition condition) {
    switch (condition) {
    case container_condition::running:
    case container_condition::memory_killed: // the container runs: what is left in it can be cancelled
        return std::nullopt;
    case container_condition::paused:
        return recovery::paused;
    case container_condition::restarted:
        return recovery::restarted;
    case container_condition::stopped:
    case container_condition::missing:
        return recovery::environment_gone;
    case container_condition::out_of_memory:
        return recovery::out_of_memory;
    case container_condition::engine_unreachable:
        return recovery::engine_unreachable;
    }
    return recovery::failed;
}

asio::awaitable<recovery> recover_container(const recovery_steps& steps, recovery_window window) {
    const auto begun = relay_clock::now();
    const auto diagnosis =
        co_await settled_diagnosis(steps, {begun + contracts::recovery_diagnosis_share(window.settle_left()),
                                           begun, window.watch_until});
    if (auto verdict = recovery_of(diagnosis.condition)) {
        co_return *verdict;
    }
    if (steps.refresh_helper) {
        // A root subject may have replaced or removed the helper since the session began: the cancel runs a
        // copy put in just now (a failed upload leaves the cancel to say what it finds).
        (void)co_await (
            steps.refresh_helper() ||
            sleep_until(relay_clock::now() + contracts::recovery_upload_share(window.settle_left())));
    }
    auto raced = co_await (steps.cancel(window.settle_left()) || sleep_until(window.settle_by));
    if (raced.index() == 0 && std::get<0>(raced) != recovery::failed) {
        co_return std::get<0>(raced);
    }
    // A container being killed still reads as running for a moment after its execs end: before calling the
    // cancel a failure, watch its state for a short while (within the settle span: a running container may
    // still need the destroy's reserve); a stopped one for a restart, as above.
    const auto now = relay_clock::now();
    const auto after = co_await settled_diagnosis(
        steps, {now, std::min(now + contracts::restart_window, window.settle_by), window.watch_until});
    const auto verdict = recovery_of(after.condition);
    co_return verdict&& after.condition != container_condition::engine_unreachable ? *verdict
                                                                                   : recovery::failed;
}

} // namespace maka_eval::relay
