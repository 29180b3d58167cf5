// The docker backend's recovery (container_recovery.hpp) through its branches: the engine's replies are
// recorded inspect answers (the shape Docker 20.10's GET /containers/{id}/json answers with), each reply
// given at a time on the relay clock, which the test moves 25 ms per real millisecond.
#include "contracts/teardown_budget.hpp"
#include "relay/backends/container_recovery.hpp"
#include "relay/support/relay_clock.hpp"

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <doctest/doctest.h>

namespace {

using namespace maka_eval::relay;
using namespace std::chrono_literals;
using std::chrono::milliseconds;
namespace asio = boost::asio;

const std::string started = "2026-12-05T15:40:01.123456789Z";
const std::string restarted_at = "2026-12-05T15:41:07.000000001Z";

std::string reply(const std::string& status, const std::string& started_at) {
    const bool running = status != "exited";
    return R"({"Id":"c0ffee","RestartCount":0,"State":{"Status":")" + status + R"(","Running":)" +
           (running ? "true" : "false") + R"(,"Paused":)" + (status == "paused" ? "true" : "false") +
           R"(,"OOMKilled":false,"Pid":4242,"StartedAt":")" + started_at +
           R"("},"Config":{"User":"","Labels":{}}})";
}

// The engine as a script: from each time (since the recovery began) on, this reply; "" never answers.
struct scripted_engine {
    std::vector<std::pair<milliseconds, std::string>> replies;
    relay_clock::time_point begun = relay_clock::now();
    int inspects = 0;
    std::optional<milliseconds> cancelled_with;
    recovery cancel_answer = recovery::settled;
    bool cancel_hangs = false;
    bool refreshed = false;

    [[nodiscard]] milliseconds since() const {
        return std::chrono::duration_cast<milliseconds>(relay_clock::now() - begun);
    }
    asio::awaitable<container_diagnosis> diagnose() {
        ++inspects;
        std::string body;
        for (const auto& [from, text] : replies) {
            if (since() >= from) {
                body = text;
            }
        }
        if (body.empty()) {
            relay_timer never(co_await asio::this_coro::executor, std::chrono::hours(24));
            co_await never.async_wait(asio::use_awaitable);
        }
        co_return diagnose_container(parse_container(body), started);
    }
    recovery_steps steps() {
        recovery_steps s;
        s.diagnose = [this] { return diagnose(); };
        s.refresh_helper = [this]() -> asio::awaitable<void> {
            refreshed = true;
            co_return;
        };
        s.cancel = [this](milliseconds runs_for) -> asio::awaitable<recovery> {
            cancelled_with = runs_for;
            if (cancel_hangs) {
                relay_timer never(co_await asio::this_coro::executor, std::chrono::hours(24));
                co_await never.async_wait(asio::use_awaitable);
            }
            co_return cancel_answer;
        };
        return s;
    }
};

struct outcome {
    recovery result = recovery::failed;
    milliseconds took{0};
};

// Runs the recovery with `settle_left` and `watch_left` from now, the relay clock moving fast meanwhile.
outcome recover_with(scripted_engine& engine, milliseconds settle_left, milliseconds watch_left) {
    asio::io_context io;
    engine.begun = relay_clock::now();
    const recovery_window window{engine.begun + settle_left, engine.begun + watch_left};
    outcome out;
    bool done = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            out.result = co_await recover_container(engine.steps(), window);
            out.took = engine.since();
            done = true;
        },
        asio::detached);
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            asio::steady_timer tick(co_await asio::this_coro::executor);
            while (!done) {
                relay_clock::advance(25ms);
                tick.expires_after(1ms);
                co_await tick.async_wait(asio::use_awaitable);
            }
        },
        asio::detached);
    io.run();
    return out;
}

TEST_CASE("recovery: a docker restart under a short budget is watched for past half the settle span") {
    // A 5 s budget with most of its settle span spent: 430 ms left to settle, 930 ms to watch. The container
    // reads stopped for 600 ms (the restart's stop and kill), then runs again, started anew.
    scripted_engine engine;
    engine.replies = {{0ms, reply("exited", started)}, {600ms, reply("running", restarted_at)}};
    const auto out = recover_with(engine, 430ms, 930ms);
    CHECK(out.result == recovery::restarted);
    CHECK(out.took >= 600ms);
    CHECK(out.took <= 930ms);
    CHECK_FALSE(engine.cancelled_with);
}

TEST_CASE(
    "recovery: stopped from outside and staying so is named after the restart window, within the watch") {
    scripted_engine engine;
    engine.replies = {{0ms, reply("exited", started)}};
    auto out = recover_with(engine, 40s, 50s);
    CHECK(out.result == recovery::environment_gone);
    CHECK(out.took >= maka_eval::contracts::restart_window - 250ms);
    CHECK(out.took <= maka_eval::contracts::restart_window + 300ms);
    // A short watch span cuts the window: the span, not the window, bounds it.
    scripted_engine short_one;
    short_one.replies = {{0ms, reply("exited", started)}};
    out = recover_with(short_one, 200ms, 700ms);
    CHECK(out.result == recovery::environment_gone);
    CHECK(out.took <= 700ms);
}

TEST_CASE("recovery: an engine that never answers is named unreachable after half the settle span") {
    scripted_engine engine; // no reply at all
    const auto out = recover_with(engine, 10s, 12s);
    CHECK(out.result == recovery::engine_unreachable);
    CHECK(out.took >= 5s - 100ms);
    CHECK(out.took <= 5s + 300ms);
    CHECK_FALSE(engine.cancelled_with);
}

TEST_CASE(
    "recovery: paused and staying so is left paused after half the settle span, a resumed one cancelled") {
    scripted_engine paused;
    paused.replies = {{0ms, reply("paused", started)}};
    auto out = recover_with(paused, 4s, 5s);
    CHECK(out.result == recovery::paused);
    CHECK(out.took >= 2s - 300ms);
    CHECK(out.took <= 2s + 300ms);
    scripted_engine resumed;
    resumed.replies = {{0ms, reply("paused", started)}, {700ms, reply("running", started)}};
    out = recover_with(resumed, 4s, 5s);
    CHECK(out.result == recovery::settled);
    CHECK(resumed.refreshed);
    REQUIRE(resumed.cancelled_with);
    CHECK(*resumed.cancelled_with <= 4s - 700ms);
}

TEST_CASE(
    "recovery: running as it was gets a fresh helper and a cancel with what is left of the settle span") {
    scripted_engine engine;
    engine.replies = {{0ms, reply("running", started)}};
    const auto out = recover_with(engine, 8s, 9s);
    CHECK(out.result == recovery::settled);
    CHECK(engine.refreshed);
    REQUIRE(engine.cancelled_with);
    CHECK(*engine.cancelled_with > 7s);
    CHECK(engine.inspects == 1);
}

TEST_CASE("recovery: a failed cancel of a container being killed names the stop, not a failure") {
    scripted_engine engine;
    engine.cancel_answer = recovery::failed;
    engine.replies = {{0ms, reply("running", started)}, {300ms, reply("exited", started)}};
    const auto out = recover_with(engine, 8s, 9s);
    CHECK(out.result == recovery::environment_gone);
}

TEST_CASE("recovery: a cancel that hangs on a running container fails at the settle deadline, leaving the "
          "reserve") {
    scripted_engine engine;
    engine.cancel_hangs = true;
    engine.replies = {{0ms, reply("running", started)}};
    const auto out = recover_with(engine, 2s, 3s);
    CHECK(out.result == recovery::failed);
    CHECK(out.took >= 2s - 50ms);
    CHECK(out.took <= 2s + 300ms); // one inspect after the deadline, then the destroy's reserve is left
}

} // namespace
