// Connections to the Docker engine (see engine_connection.hpp).
#include "relay/engine/engine_connection.hpp"

#include "relay/support/tcp_endpoints.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/experimental/awaitable_operators.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

namespace maka_eval::relay {
namespace {

using asio::as_tuple;
using asio::use_awaitable;
using namespace asio::experimental::awaitable_operators;

// Reaching the engine and the TLS handshake: a remote engine that does not answer must not hold a trial.
constexpr auto connect_timeout = std::chrono::seconds(15);

template <typename Operation>
asio::awaitable<boost::system::error_code> within_connect_timeout(Operation operation) {
    asio::steady_timer timer(co_await asio::this_coro::executor, connect_timeout);
    auto done = co_await (operation() || timer.async_wait(as_tuple(use_awaitable)));
    if (done.index() == 1) {
        co_return asio::error::timed_out;
    }
    co_return std::get<0>(std::get<0>(done));
}

} // namespace

std::string failure_text(connection& c, const engine_endpoint& engine, const std::string& what,
                         const boost::system::error_code& ec) {
    if (c.ssl() != nullptr &&
        (ec.category() == asio::error::get_ssl_category() || ::SSL_get_verify_result(c.ssl()) != X509_V_OK)) {
        return describe_tls_failure(ec, c.ssl(), c.note, engine);
    }
    return what + ": " + ec.message();
}

asio::awaitable<boost::system::result<std::unique_ptr<connection>, relay_error>>
open_connection(const engine_endpoint& engine, asio::ssl::context* tls, const tls_session_cache& sessions) {
    auto executor = co_await asio::this_coro::executor;
    auto unreachable = [&](const std::string& why) {
        return relay_error{relay_errc::engine,
                           "cannot reach the Docker engine at " + engine.url() + ": " + why};
    };
    if (engine.transport == engine_transport::unix_socket) {
        auto c = std::make_unique<connection>(connection{local_socket(executor), {}, {}});
        auto& socket = std::get<local_socket>(c->socket);
        const asio::local::stream_protocol::endpoint path(engine.path);
        const auto ec = co_await within_connect_timeout(
            [&] { return socket.async_connect(path, as_tuple(use_awaitable)); });
        if (ec == asio::error::access_denied) {
            co_return unreachable(ec.message() +
                                  " (the engine's socket admits root and the docker group: run as "
                                  "root, or add this user to it: usermod -aG docker USER)");
        }
        if (ec) {
            co_return unreachable(ec.message());
        }
        co_return c;
    }
    const std::string host = engine.host; // named: GCC 12 and temporaries in a co_await's operands
    const std::string port = engine.port;
    auto resolved = co_await tcp_endpoints(executor, host, port);
    if (!resolved) {
        co_return unreachable(resolved.error().message());
    }
    const auto& endpoints = *resolved;
    tcp_socket socket(executor);
    const auto cec = co_await within_connect_timeout(
        [&] { return asio::async_connect(socket, endpoints, as_tuple(use_awaitable)); });
    if (cec) {
        co_return unreachable(cec.message());
    }
    boost::system::error_code no_delay_failed; // only a latency hint: the connection works without it
    socket.set_option(asio::ip::tcp::no_delay(true), no_delay_failed);
    if (engine.transport == engine_transport::tcp) {
        co_return std::make_unique<connection>(connection{std::move(socket), {}, {}});
    }
    auto c = std::make_unique<connection>(connection{tls_stream(std::move(socket), *tls), {}, {}});
    auto& stream = std::get<tls_stream>(c->socket);
    if (!expect_engine_identity(stream.native_handle(), engine, c->note)) {
        co_return unreachable("cannot set up TLS for host " + engine.host);
    }
    sessions.resume(stream.native_handle());
    const auto hec = co_await within_connect_timeout(
        [&] { return stream.async_handshake(asio::ssl::stream_base::client, as_tuple(use_awaitable)); });
    if (hec) {
        co_return relay_error{relay_errc::engine,
                              hec == asio::error::timed_out
                                  ? "the TLS handshake with the Docker engine at " + engine.url() +
                                        " did not finish in " + std::to_string(connect_timeout.count()) + " s"
                                  : describe_tls_failure(hec, stream.native_handle(), c->note, engine)};
    }
    co_return c;
}

} // namespace maka_eval::relay
