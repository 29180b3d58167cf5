// The trial's event sources (trial_machine.hpp): each reads one source into the event queue — the
// orchestrator's lines, the helper's messages, signals, the time limit, the terminal's size and the relay's
// stdin — and the orchestrator's side of the exchange (its lines checked, `executed` written); at the end,
// everything closed.
#include "contracts/limits.hpp"
#include "contracts/orchestrator_messages.hpp"
#include "contracts/session_messages.hpp"
#include "contracts/wire_json.hpp"
#include "relay/support/exit_codes.hpp"
#include "relay/trial/trial_machine.hpp"

#include <csignal>

#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>

namespace maka_eval::relay::detail {

using asio::as_tuple;
using asio::use_awaitable;
using namespace asio::experimental::awaitable_operators;

namespace {
constexpr auto write_timeout = milliseconds(30'000);
} // namespace

void trial::spawn(asio::awaitable<void> reader) {
    asio::co_spawn(executor_, std::move(reader),
                   [self = shared_from_this()](const std::exception_ptr& error) {
                       if (error) {
                           self->log_.error("reader failed: " + exception_text(error));
                       }
                   });
}

asio::awaitable<void> trial::watch_signals() {
    auto self = shared_from_this();
    while (true) {
        auto [ec, sig] = co_await signals_.async_wait(as_tuple(use_awaitable));
        if (ec) {
            co_return;
        }
        (void)begin_stopping(sig);
        host_teardown_ = host_teardown_ || sig == SIGINT;
        // SIGHUP (a closed terminal, a process supervisor's hang-up) is a cancellation as SIGTERM is: the
        // subject settled within the budget and reported; only SIGINT means host teardown.
        log_.phase("signal", {{"signal", sig == SIGINT   ? "SIGINT"
                                         : sig == SIGHUP ? "SIGHUP"
                                                         : "SIGTERM"},
                              {"means", sig == SIGINT ? "host teardown" : "cancellation"}});
        post({event::kind::signal, {}, {}, sig == SIGINT ? SIGINT : SIGTERM});
    }
}

bool trial::begin_stopping(int sig) {
    if (first_signal_ != 0) {
        return false;
    }
    first_signal_ = sig;
    stop_latch_.expires_at(clock_type::time_point::min());
    return true;
}

void trial::cancel_as_timeout(std::string why, const std::string& phase) {
    if (!begin_stopping(SIGTERM)) {
        return; // already cancelled: the first cause is the one reported
    }
    log_.phase(phase, {{"why", why}, {"means", "cancellation"}});
    cancelled_because_ = std::move(why);
    post({event::kind::signal, {}, {}, SIGTERM});
}

asio::awaitable<void> trial::watch_time_limit() {
    auto self = shared_from_this();
    time_limit_.expires_after(*config_.time_limit);
    auto [ec] = co_await time_limit_.async_wait(as_tuple(use_awaitable));
    if (!ec && phase_ != trial_phase::done) {
        cancel_as_timeout("the time limit of " + config_.time_limit_text + " (--timeout) elapsed", "timeout");
    }
}

asio::awaitable<void> trial::watch_window() {
    auto self = shared_from_this();
    while (true) {
        auto [ec, sig] = co_await window_.async_wait(as_tuple(use_awaitable));
        if (ec) {
            co_return;
        }
        post({event::kind::window_changed, {}, {}, sig});
    }
}

void trial::send_window_size() {
    if (const auto size = window_size(config_.terminal_fd)) {
        to_helper(contracts::serialize(contracts::resize_message{size->first, size->second}));
    }
}

void trial::to_helper(std::string line) {
    to_helper_.push_back(std::move(line));
    to_helper_ready_.cancel(); // wakes the writer, if it waits
}

asio::awaitable<void> trial::write_to_helper() {
    auto self = shared_from_this();
    while (session_ && phase_ != trial_phase::done) {
        if (to_helper_.empty()) {
            to_helper_ready_.expires_at(clock_type::time_point::max());
            (void)co_await to_helper_ready_.async_wait(as_tuple(use_awaitable)); // to_helper, or the end
            continue;
        }
        std::string line = std::move(to_helper_.front());
        to_helper_.pop_front();
        const bool sent = co_await session_->send(std::move(line)); // a statement of its own (GCC 12)
        if (!sent) {
            co_return; // the session is gone: nothing more can reach the helper
        }
    }
}

asio::awaitable<void> trial::forward_input() {
    auto self = shared_from_this();
    escape_watch escape;
    const bool watching = config_.terminal_fd >= 0;
    while (stdin_) {
        while (input_in_flight_ + contracts::input_chunk_bytes > contracts::input_window_bytes) {
            input_credit_.expires_at(clock_type::time_point::max());
            (void)co_await input_credit_.async_wait(as_tuple(use_awaitable)); // cancelled by `input-taken`
            if (!stdin_ || phase_ == trial_phase::done) {
                co_return;
            }
        }
        auto chunk = co_await stdin_->read(contracts::input_chunk_bytes);
        if (!stdin_) {
            co_return; // the trial ended while the read waited
        }
        if (!chunk) {
            post({event::kind::subject_input, {}, {}, 0, true});
            co_return;
        }
        std::string data = watching ? escape.pass(*chunk) : std::move(*chunk);
        if (!data.empty()) {
            input_in_flight_ += data.size();
            post({event::kind::subject_input, std::move(data), {}, 0, false});
        }
        if (escape.escaped()) {
            cancel_as_timeout("the terminal's escape (Ctrl-] three times)", "escape");
            co_return;
        }
    }
}

asio::awaitable<void> trial::read_orchestrator() {
    auto self = shared_from_this();
    std::string buffer;
    while (true) {
        auto [ec, size] = co_await asio::async_read_until(
            socket_, asio::dynamic_buffer(buffer, contracts::control_line_limit_bytes), '\n',
            as_tuple(use_awaitable));
        if (!ec) {
            post({event::kind::orchestrator_line, buffer.substr(0, size - 1), {}, 0});
            buffer.erase(0, size);
            continue;
        }
        if (ec == asio::error::operation_aborted) {
            co_return;
        }
        if (ec == asio::error::not_found) {
            post({event::kind::orchestrator_bad,
                  "a control line exceeds " + std::to_string(contracts::control_line_limit_bytes) + " bytes",
                  {},
                  0});
            co_return;
        }
        // A final line without "\n" before EOF counts, as the original's readline gave it.
        if (ec == asio::error::eof && !buffer.empty()) {
            post({event::kind::orchestrator_line, std::move(buffer), {}, 0});
        }
        post(
            {event::kind::orchestrator_closed, ec == asio::error::eof ? "peer closed" : ec.message(), {}, 0});
        co_return;
    }
}

asio::awaitable<void> trial::read_helper() {
    auto self = shared_from_this();
    while (session_) {
        auto line = co_await session_->receive();
        if (!line) {
            post({event::kind::helper_closed, {}, {}, 0});
            co_return;
        }
        last_heard_ = clock_type::now();
        auto message = contracts::parse_session_message(*line);
        if (!message) {
            log_.error("helper sent an unreadable line: " + message.error().message());
            continue;
        }
        if (std::holds_alternative<contracts::heartbeat_message>(*message)) {
            continue; // its whole meaning is in last_heard_
        }
        if (auto* output = std::get_if<contracts::output_message>(&*message)) {
            if (output->size > 0) {
                // Its bytes follow the line, raw.
                auto bytes = co_await session_->receive_bytes(static_cast<std::size_t>(output->size));
                if (!bytes) {
                    post({event::kind::helper_closed, {}, {}, 0});
                    co_return;
                }
                output->data = std::move(*bytes);
            }
            if (config_.follow != nullptr) {
                config_.follow->deliver(*output);
            }
            continue; // shown, never part of the trial's record
        }
        post({event::kind::helper_message, {}, std::move(*message), 0});
    }
}

asio::awaitable<bool> trial::send_orchestrator(std::string line) {
    relay_timer timer(executor_, write_timeout);
    auto done = co_await (asio::async_write(socket_, asio::buffer(line), as_tuple(use_awaitable)) ||
                          timer.async_wait(as_tuple(use_awaitable)));
    co_return done.index() == 0 && !std::get<0>(std::get<0>(done));
}

std::variant<trial_phase, boost::json::object> trial::orchestrator_message(const std::string& line,
                                                                           std::string_view kind) {
    auto object = contracts::parse_object(line, contracts::control_line_limit_bytes);
    if (!object) {
        // Unreadable or non-object JSON is transport loss in the original, not a refusal.
        return end(exit_transport_lost,
                   "Maka Eval relay message was unavailable: " + object.error().message());
    }
    if (auto valid = contracts::require_message(*object, config_.token, kind); !valid) {
        return end(exit_refused, valid.error().message());
    }
    return std::move(*object);
}

asio::awaitable<bool> trial::send_executed(const contracts::executed_message& executed, bool says_how) {
    std::string line = contracts::serialize(executed);
    if (config_.signed_result) {
        record_.executed_line = line;
    }
    const bool sent = co_await send_orchestrator(std::move(line));
    if (sent) {
        executed_sent_ = true;
        if (says_how) {
            log_.phase("executed",
                       {{"termination", std::string(contracts::to_string(executed.termination))}});
        } else {
            log_.phase("executed");
        }
    }
    co_return sent;
}

void trial::finish() {
    boost::system::error_code ignored;
    if (session_) {
        session_->close_input();
    }
    socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
    signals_.cancel(ignored);
    window_.cancel(ignored);
    time_limit_.cancel();
    input_credit_.cancel();
    to_helper_ready_.cancel(); // the writer ends (a write still pending ends with the session's input)
    stdin_.reset();            // a read still pending on the relay's stdin ends with it
    events_.close();
}

} // namespace maka_eval::relay::detail
