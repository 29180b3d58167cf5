// One connection to the Docker engine (unix socket, TCP, or TLS over TCP), its deadline, and how it is
// opened: what docker_api's requests and the exec streams (exec_stream.cpp) are carried on.
//
// Internal to relay/engine: it brings Beast and OpenSSL with it, so only this room's .cpp files include it.
#pragma once

#include "relay/engine/engine_endpoint.hpp"
#include "relay/engine/engine_tls.hpp"
#include "relay/engine/exec_stream.hpp"
#include "relay/support/error.hpp"

#include <chrono>
#include <memory>
#include <string>
#include <variant>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/local/stream_protocol.hpp>
#include <boost/asio/ssl/context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>
#include <boost/system/result.hpp>

namespace maka_eval::relay {

namespace beast = boost::beast;
using local_socket = asio::local::stream_protocol::socket;
using tcp_socket = asio::ip::tcp::socket;
using tls_stream = beast::ssl_stream<tcp_socket>;

// One connection to the engine: unix, TCP, or TLS over TCP.
struct connection {
    std::variant<local_socket, tcp_socket, tls_stream> socket;
    beast::flat_buffer buffer;
    tls_verify_note note; // what verification found wrong (TLS only)

    template <typename F>
    decltype(auto) visit(F&& f) {
        return std::visit(std::forward<F>(f), socket);
    }
    SSL* ssl() {
        auto* tls = std::get_if<tls_stream>(&socket);
        return tls != nullptr ? tls->native_handle() : nullptr;
    }
    // Ends whatever is pending on the connection (it completes with an error).
    void close() {
        visit([](auto& s) {
            boost::system::error_code ignored;
            beast::get_lowest_layer(s).close(ignored);
        });
    }
    asio::any_io_executor executor() {
        return visit([](auto& s) { return asio::any_io_executor(s.get_executor()); });
    }
};

// Closes a connection when `timeout` passes before the deadline is lifted, so that a pending write or read
// ends with an error: an engine that accepts and never answers cannot hold a trial. A timer handler rather
// than a cancelled operation, so it works the same for every layer (unix, TCP, TLS) and for the Beast
// operations on top. The handler may run after its deadline is gone: it only touches the shared state,
// and the connection only while the deadline is armed (the connection outlives an armed deadline).
class connection_deadline {
  public:
    connection_deadline(connection& c, std::chrono::milliseconds timeout)
        : timer_(c.executor(), timeout), state_(std::make_shared<state>()) {
        state_->c = &c;
        timer_.async_wait([s = state_](boost::system::error_code ec) {
            if (!ec && s->c != nullptr) {
                s->fired = true;
                s->c->close();
            }
        });
    }
    connection_deadline(const connection_deadline&) = delete;
    connection_deadline& operator=(const connection_deadline&) = delete;
    ~connection_deadline() { lift(); }
    void lift() {
        state_->c = nullptr;
        timer_.cancel();
    }
    [[nodiscard]] bool fired() const { return state_->fired; }

  private:
    struct state {
        connection* c = nullptr;
        bool fired = false;
    };
    asio::steady_timer timer_;
    std::shared_ptr<state> state_;
};

// `what` failed on connection `c`. Over TLS the reason may be the handshake's (with TLS 1.3 the engine
// refuses a client certificate only once the client's side of the handshake is done, so the first read
// fails): then the TLS failure is the whole story.
[[nodiscard]] std::string failure_text(connection& c, const engine_endpoint& engine, const std::string& what,
                                       const boost::system::error_code& ec);

// A new connection to `engine` (`tls` for a TLS endpoint), within the connect timeout.
asio::awaitable<boost::system::result<std::unique_ptr<connection>, relay_error>>
open_connection(const engine_endpoint& engine, asio::ssl::context* tls, const tls_session_cache& sessions);

// The attached exec on `c` (its HTTP upgrade done; `leftover`: bytes read past the response head).
[[nodiscard]] std::unique_ptr<exec_stream> make_exec_stream(std::unique_ptr<connection> c,
                                                            std::string leftover);

} // namespace maka_eval::relay
