// The loopback orchestrator (see loopback_orchestrator.hpp).
#include "relay/cli/loopback_orchestrator.hpp"

#include "contracts/limits.hpp"
#include "contracts/wire_json.hpp"

#include <functional>
#include <stdexcept>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

namespace maka_eval::relay {
namespace {

namespace asio = boost::asio;
using asio::as_tuple;
using asio::use_awaitable;
using asio::ip::tcp;
using namespace asio::experimental::awaitable_operators;

constexpr std::chrono::seconds step_timeout(600);

struct line_result {
    std::optional<std::string> line; // nullopt: EOF, error or timeout
    bool timed_out = false;
};

asio::awaitable<line_result> read_line(tcp::socket& socket, std::string& buffer,
                                       std::chrono::milliseconds timeout) {
    asio::steady_timer timer(co_await asio::this_coro::executor, timeout);
    auto r = co_await (asio::async_read_until(socket, asio::dynamic_buffer(buffer, 16U << 20U), '\n',
                                              as_tuple(use_awaitable)) ||
                       timer.async_wait(as_tuple(use_awaitable)));
    if (r.index() != 0) {
        co_return line_result{std::nullopt, true};
    }
    auto [ec, size] = std::get<0>(r);
    if (ec) {
        co_return line_result{};
    }
    std::string line = buffer.substr(0, size - 1);
    buffer.erase(0, size);
    co_return line_result{std::move(line)};
}

// The next line, recorded in the transcript, as an object that passes `check`; otherwise `failure` is set.
asio::awaitable<std::optional<boost::json::object>>
expect(tcp::socket& socket, std::string& buffer, transcript& t, const std::string& failure,
       const std::function<bool(const boost::json::object&)>& check) {
    auto got = co_await read_line(socket, buffer, step_timeout);
    if (got.line) {
        t.received.push_back(*got.line);
        auto object = contracts::parse_object(*got.line, 16U << 20U);
        if (object && check(*object)) {
            co_return std::move(*object);
        }
    }
    t.failure = failure;
    co_return std::nullopt;
}

asio::awaitable<void> pause(std::uint32_t ms) {
    asio::steady_timer timer(co_await asio::this_coro::executor, std::chrono::milliseconds(ms));
    co_await timer.async_wait(as_tuple(use_awaitable));
}

} // namespace

std::optional<misbehaviour> misbehaviour_from(std::string_view name) {
    static const std::pair<std::string_view, misbehaviour> names[] = {
        {"none", misbehaviour::none},
        {"wrong-token", misbehaviour::wrong_token},
        {"wrong-kind", misbehaviour::wrong_kind},
        {"garbage", misbehaviour::garbage},
        {"huge-line", misbehaviour::huge_line},
        {"close-after-accept", misbehaviour::close_after_accept},
        {"close-after-ready", misbehaviour::close_after_ready},
        {"close-during-run", misbehaviour::close_during_run},
        {"control-during-run", misbehaviour::control_during_run},
        {"close-after-executed", misbehaviour::close_after_executed},
        {"bad-decision", misbehaviour::bad_decision},
    };
    for (const auto& [text, value] : names) {
        if (text == name) {
            return value;
        }
    }
    return std::nullopt;
}

loopback_orchestrator::loopback_orchestrator(const asio::any_io_executor& executor, std::string token,
                                             orchestrator_script script)
    : acceptor_(executor, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)), token_(std::move(token)),
      script_(std::move(script)) {}

std::uint16_t loopback_orchestrator::port() const {
    return acceptor_.local_endpoint().port();
}

asio::awaitable<transcript> loopback_orchestrator::serve() {
    transcript t;
    tcp::socket socket(co_await asio::this_coro::executor);
    asio::steady_timer accept_timer(co_await asio::this_coro::executor, step_timeout);
    auto accepted = co_await (acceptor_.async_accept(socket, as_tuple(use_awaitable)) ||
                              accept_timer.async_wait(as_tuple(use_awaitable)));
    boost::system::error_code ignored;
    acceptor_.close(ignored); // one connection, as the orchestrator's stopServer()
    if (accepted.index() != 0 || std::get<0>(std::get<0>(accepted))) {
        t.failure = "no connection";
        co_return t;
    }
    auto send = [&socket](std::string line) -> asio::awaitable<bool> {
        auto [ec, n] = co_await asio::async_write(socket, asio::buffer(line), as_tuple(use_awaitable));
        co_return !ec;
    };
    const auto act = script_.act;
    if (act == misbehaviour::close_after_accept) {
        socket.close(ignored);
        t.failure = "closed after accept";
        co_return t;
    }
    std::string buffer;
    const std::string invalid_ready = "invalid-ready";
    const std::function<bool(const boost::json::object&)> ready_check = [this](const boost::json::object& o) {
        return contracts::check_ready(o, token_).has_value();
    };
    t.ready = co_await expect(socket, buffer, t, invalid_ready, ready_check);
    if (!t.ready) {
        co_return t;
    }
    if (script_.on_event) {
        script_.on_event("ready");
    }
    if (act == misbehaviour::close_after_ready) {
        socket.close(ignored);
        t.failure = "closed after ready";
        co_return t;
    }
    if (script_.hold) {
        co_await read_line(socket, buffer, step_timeout); // until the relay goes away
        t.failure = "held";
        co_return t;
    }
    std::string execute = contracts::serialize_execute(
        act == misbehaviour::wrong_token ? "not-the-token" : token_, script_.request);
    if (script_.raw_execute) {
        auto raw = contracts::parse_object(*script_.raw_execute, 16U << 20U);
        if (raw) {
            (*raw)["token"] = token_;
            (*raw)["kind"] = "execute";
            execute = contracts::to_wire(*raw) + "\n";
        }
    }
    if (act == misbehaviour::wrong_kind) {
        execute = contracts::serialize_verify(token_);
    } else if (act == misbehaviour::garbage) {
        execute = "this is not json\n";
    } else if (act == misbehaviour::huge_line) {
        execute = std::string(10U << 20U, 'x') + "\n";
    }
    co_await send(std::move(execute));
    if (act == misbehaviour::close_during_run || act == misbehaviour::control_during_run) {
        co_await pause(script_.during_run_delay_ms);
        if (act == misbehaviour::close_during_run) {
            socket.close(ignored);
            t.failure = "closed during run";
            co_return t;
        }
        std::string early = contracts::serialize_verify(token_); // named: GCC 12 co_await temporaries bug
        co_await send(std::move(early));
    }
    // The orchestrator's two failures: nothing came ("unavailable"), or something it does not accept.
    const std::string unavailable = "relay result was unavailable";
    const std::function<bool(const boost::json::object&)> executed_check =
        [this](const boost::json::object& o) { return contracts::check_executed(o, token_).has_value(); };
    t.executed = co_await expect(socket, buffer, t, unavailable, executed_check);
    if (!t.executed) {
        if (t.received.size() > 1) { // a line came after `ready`, and it was not acceptable
            t.failure = "relay returned an invalid execution result";
        }
        co_return t;
    }
    if (script_.on_event) {
        script_.on_event("executed");
    }
    if (act == misbehaviour::close_after_executed) {
        socket.close(ignored);
        co_return t;
    }
    if (script_.verify_delay_ms > 0) {
        // The pause ends early when the relay goes away (or speaks out of turn): nothing waits it out.
        auto early = co_await read_line(socket, buffer, std::chrono::milliseconds(script_.verify_delay_ms));
        if (!early.timed_out) {
            if (early.line) {
                t.received.push_back(std::move(*early.line));
                t.failure = "relay sent a line after executed";
            }
            co_return t;
        }
    }
    std::string decision =
        act == misbehaviour::bad_decision
            ? "{\"token\":" + contracts::to_wire(boost::json::string(token_)) + ",\"kind\":\"execute\"}\n"
            : contracts::serialize_verify(token_);
    const bool sent = co_await send(std::move(decision));
    t.verify_sent = sent && act != misbehaviour::bad_decision;
    // socket.end(): the write is followed by a half-close; then wait for the relay to close.
    socket.shutdown(tcp::socket::shutdown_send, ignored);
    co_await read_line(socket, buffer, std::chrono::seconds(30));
    co_return t;
}

} // namespace maka_eval::relay
