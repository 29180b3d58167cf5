// One ordered queue of events for a single-threaded coroutine, with an optional deadline per wait.
//
// The trial has several sources (the orchestrator's lines, the helper's messages, signals) and one consumer
// that takes events one at a time, often with a bound on how long it waits. Two properties matter and are
// easy to lose with a bare channel:
// - nothing is dropped and the order is kept: Boost 1.81's channel refuses try_send when it is full, and
//   also right after a waiting receive was cancelled until the next receive starts, so whatever it refuses
//   waits in a backlog, and every later post joins it until it is empty; `next` takes what the channel
//   holds first (it was posted before any of the backlog), then the backlog;
// - a timed wait never cancels a receive (a cancelled receive can lose the event it was completing with): the
//   deadline arrives as an entry of its own, tagged with the wait it belongs to, and one from an earlier wait
//   is ignored.
// The queue's state is shared with its timer's handler, so a deadline firing after the queue is gone touches
// nothing.
#pragma once

#include "relay/support/relay_clock.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <utility>
#include <variant>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/experimental/channel.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace maka_eval::relay {

template <class Event>
class event_queue {
  public:
    using clock_type = relay_clock; // tests move it (relay_clock.hpp)

    explicit event_queue(const boost::asio::any_io_executor& executor, std::size_t capacity = 256)
        : state_(std::make_shared<state>(executor, capacity)), timer_(executor) {}
    event_queue(const event_queue&) = delete;
    event_queue& operator=(const event_queue&) = delete;
    ~event_queue() { close(); }

    // Never blocks, never drops (until closed), keeps the order of posts.
    void post(Event event) { state_->post(entry(std::in_place_index<0>, std::move(event))); }

    // The next event; nullopt when `deadline` passed first or the queue was closed.
    boost::asio::awaitable<std::optional<Event>> next(std::optional<clock_type::time_point> deadline) {
        const std::uint64_t wait = ++state_->waits;
        if (deadline) {
            timer_.expires_at(*deadline);
            timer_.async_wait([weak = std::weak_ptr<state>(state_), wait](boost::system::error_code ec) {
                if (auto alive = weak.lock(); alive && !ec) {
                    alive->post(entry(std::in_place_index<1>, tick{wait}));
                }
            });
        }
        // The state outlives this coroutine's suspension even if the queue is closed meanwhile.
        const auto held = state_;
        while (true) {
            entry next_entry;
            if (!held->backlog.empty()) {
                // What the channel holds was posted before anything in the backlog: it goes first.
                const bool from_channel =
                    held->channel.try_receive([&next_entry](boost::system::error_code, entry received) {
                        next_entry = std::move(received);
                    });
                if (!from_channel) {
                    next_entry = std::move(held->backlog.front());
                    held->backlog.pop_front();
                }
            } else {
                auto [ec, received] =
                    co_await held->channel.async_receive(boost::asio::as_tuple(boost::asio::use_awaitable));
                if (ec) {
                    co_return std::nullopt;
                }
                next_entry = std::move(received);
            }
            if (const auto* deadline_tick = std::get_if<1>(&next_entry)) {
                if (deadline && deadline_tick->wait == wait) {
                    co_return std::nullopt;
                }
                continue; // an earlier wait's
            }
            if (deadline) {
                timer_.cancel(); // a pending wait would keep the io_context alive until it expired
            }
            co_return std::move(std::get<0>(next_entry));
        }
    }

    // Ends the queue: a waiting or later `next` returns nullopt, later posts are dropped.
    void close() {
        timer_.cancel();
        state_->channel.close();
        state_->backlog.clear();
    }
    [[nodiscard]] bool is_open() const { return state_->channel.is_open(); }

  private:
    struct tick {
        std::uint64_t wait = 0;
    };
    using entry = std::variant<Event, tick>;
    using channel_type = boost::asio::experimental::channel<void(boost::system::error_code, entry)>;

    struct state {
        state(const boost::asio::any_io_executor& executor, std::size_t capacity)
            : channel(executor, capacity) {}
        void post(entry e) {
            if (!channel.is_open()) {
                return;
            }
            if (backlog.empty() && channel.try_send(boost::system::error_code{}, e)) {
                return;
            }
            backlog.push_back(std::move(e));
        }
        channel_type channel;
        std::deque<entry> backlog;
        std::uint64_t waits = 0;
    };

    std::shared_ptr<state> state_;
    relay_timer timer_;
};

} // namespace maka_eval::relay
