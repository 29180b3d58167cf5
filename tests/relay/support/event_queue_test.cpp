// The trial's event queue: order kept past the channel's capacity, a deadline that ends one wait only, and a
// close that ends a waiting consumer.
#include "relay/support/event_queue.hpp"

#include <chrono>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <doctest/doctest.h>

namespace {

namespace asio = boost::asio;
using maka_eval::relay::event_queue;
using namespace std::chrono_literals;
using clock_type = maka_eval::relay::relay_clock;

// Runs `body` to completion on a fresh io_context; a failure it throws fails the test.
template <class Body>
void run_coroutine(Body body) {
    asio::io_context io;
    bool finished = false;
    asio::co_spawn(io, body(io.get_executor()), [&finished](const std::exception_ptr& error) {
        finished = true;
        if (error) {
            std::rethrow_exception(error);
        }
    });
    io.run();
    CHECK(finished);
}

TEST_CASE("events posted past the channel's capacity all arrive, in order") {
    run_coroutine([](asio::any_io_executor executor) -> asio::awaitable<void> {
        event_queue<int> queue(executor, 4);
        for (int i = 0; i < 100; ++i) {
            queue.post(i);
        }
        std::vector<int> seen;
        while (seen.size() < 100) {
            auto e = co_await queue.next(std::nullopt);
            REQUIRE(e);
            seen.push_back(*e);
            if (seen.size() == 50) {
                queue.post(100); // posted while the backlog still holds older ones: goes after them
            }
        }
        for (int i = 0; i < 100; ++i) {
            CHECK(seen[static_cast<std::size_t>(i)] == i);
        }
        auto last = co_await queue.next(std::nullopt);
        REQUIRE(last);
        CHECK(*last == 100);
    });
}

TEST_CASE("a deadline ends its own wait, and an earlier wait's deadline never ends a later one") {
    run_coroutine([](asio::any_io_executor executor) -> asio::awaitable<void> {
        event_queue<std::string> queue(executor);
        const auto begun = clock_type::now();
        auto none = co_await queue.next(begun + 20ms);
        CHECK_FALSE(none);
        CHECK(clock_type::now() - begun >= 20ms);

        // A wait whose event comes first leaves a timer that must not end the next, untimed wait.
        queue.post("first");
        auto first = co_await queue.next(clock_type::now() + 10ms);
        REQUIRE(first);
        CHECK(*first == "first");
        maka_eval::relay::relay_timer later(executor, 40ms);
        later.async_wait([&queue](boost::system::error_code) { queue.post("second"); });
        auto second = co_await queue.next(std::nullopt);
        REQUIRE(second);
        CHECK(*second == "second");
    });
}

TEST_CASE(
    "an event that arrives before the deadline is returned and the timer does not keep the loop alive") {
    asio::io_context io;
    event_queue<int> queue(io.get_executor());
    std::optional<int> got;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            got = co_await queue.next(clock_type::now() + std::chrono::hours(1));
        },
        [](const std::exception_ptr& error) {
            if (error) {
                std::rethrow_exception(error);
            }
        });
    asio::post(io, [&queue] { queue.post(7); });
    const auto begun = clock_type::now();
    io.run(); // returns once nothing is pending: the hour-long timer was cancelled
    CHECK(clock_type::now() - begun < 10s);
    REQUIRE(got);
    CHECK(*got == 7);
}

TEST_CASE("close ends a waiting consumer and later posts are dropped") {
    asio::io_context io;
    auto queue = std::make_unique<event_queue<int>>(io.get_executor());
    bool ended = false;
    std::optional<int> got = 1;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            got = co_await queue->next(std::nullopt);
            ended = true;
        },
        [](const std::exception_ptr& error) {
            if (error) {
                std::rethrow_exception(error);
            }
        });
    asio::post(io, [&] {
        queue->close();
        queue->post(5);
        CHECK_FALSE(queue->is_open());
    });
    io.run();
    CHECK(ended);
    CHECK_FALSE(got);
}

} // namespace
