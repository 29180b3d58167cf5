// The loopback orchestrator (see loopback_orchestrator.hpp).
#include "relay/cli/loopback_orchestrator.hpp"

#include "contracts/wire_json.hpp"

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

// How long the orchestrator waits at each step (its own timeouts are longer than any trial here).
constexpr std::chrono::seconds step_timeout(600);
constexpr std::size_t line_limit = 16U << 20U;

} // namespace

orchestrator_peer::orchestrator_peer(const asio::any_io_executor& executor, std::string token)
    : acceptor_(executor, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)), socket_(executor),
      token_(std::move(token)) {}

std::uint16_t orchestrator_peer::port() const {
    return acceptor_.local_endpoint().port();
}

asio::awaitable<bool> orchestrator_peer::accept() {
    asio::steady_timer timer(co_await asio::this_coro::executor, step_timeout);
    auto accepted = co_await (acceptor_.async_accept(socket_, as_tuple(use_awaitable)) ||
                              timer.async_wait(as_tuple(use_awaitable)));
    boost::system::error_code ignored;
    acceptor_.close(ignored);
    if (accepted.index() != 0 || std::get<0>(std::get<0>(accepted))) {
        seen_.failure = "no connection";
        co_return false;
    }
    co_return true;
}

asio::awaitable<peer_line> orchestrator_peer::read_line(std::chrono::milliseconds timeout) {
    asio::steady_timer timer(co_await asio::this_coro::executor, timeout);
    auto r = co_await (asio::async_read_until(socket_, asio::dynamic_buffer(buffer_, line_limit), '\n',
                                              as_tuple(use_awaitable)) ||
                       timer.async_wait(as_tuple(use_awaitable)));
    if (r.index() != 0) {
        co_return peer_line{std::nullopt, true};
    }
    auto [ec, size] = std::get<0>(r);
    if (ec) {
        co_return peer_line{};
    }
    std::string line = buffer_.substr(0, size - 1);
    buffer_.erase(0, size);
    co_return peer_line{std::move(line)};
}

asio::awaitable<std::optional<boost::json::object>> orchestrator_peer::next_object() {
    auto got = co_await read_line(step_timeout);
    if (!got.line) {
        co_return std::nullopt;
    }
    seen_.received.push_back(*got.line);
    auto object = contracts::parse_object(*got.line, line_limit);
    co_return object ? std::optional<boost::json::object>(std::move(*object)) : std::nullopt;
}

asio::awaitable<bool> orchestrator_peer::expect_ready() {
    auto object = co_await next_object();
    if (object && contracts::check_ready(*object, token_)) {
        seen_.ready = std::move(*object);
        co_return true;
    }
    seen_.failure = "invalid-ready";
    co_return false;
}

asio::awaitable<bool> orchestrator_peer::expect_executed() {
    const auto lines_before = seen_.received.size();
    auto object = co_await next_object();
    if (object && contracts::check_executed(*object, token_)) {
        seen_.executed = std::move(*object);
        co_return true;
    }
    // The orchestrator's two failures: nothing came ("unavailable"), or something it does not accept.
    seen_.failure = seen_.received.size() > lines_before ? "relay returned an invalid execution result"
                                                         : "relay result was unavailable";
    co_return false;
}

asio::awaitable<bool> orchestrator_peer::send(std::string line) {
    auto [ec, n] = co_await asio::async_write(socket_, asio::buffer(line), as_tuple(use_awaitable));
    co_return !ec;
}

asio::awaitable<void> orchestrator_peer::decide(std::string decision, bool is_verify) {
    const bool sent = co_await send(std::move(decision));
    seen_.verify_sent = sent && is_verify;
    // socket.end(): the write is followed by a half-close; then wait for the relay to close.
    boost::system::error_code ignored;
    socket_.shutdown(tcp::socket::shutdown_send, ignored);
    co_await read_line(std::chrono::seconds(30));
}

void orchestrator_peer::close(std::string failure) {
    boost::system::error_code ignored;
    socket_.close(ignored);
    seen_.failure = std::move(failure);
}

asio::awaitable<transcript> serve_trial(orchestrator_peer& peer, contracts::execute_request request) {
    if (co_await peer.accept() && co_await peer.expect_ready()) {
        std::string execute = contracts::serialize_execute(peer.token(), request);
        if (co_await peer.send(std::move(execute)) && co_await peer.expect_executed()) {
            std::string verify = contracts::serialize_verify(peer.token()); // named: GCC 12 co_await bug
            co_await peer.decide(std::move(verify));
        }
    }
    co_return std::move(peer.seen());
}

} // namespace maka_eval::relay
