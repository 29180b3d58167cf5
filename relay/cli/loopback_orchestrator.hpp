// The loopback orchestrator: `maka-eval-relay run`'s TCP peer, speaking as harness-executor.ts does.
//
// `orchestrator_peer` is one connection's steps — accept one connection, check `ready`, send a line, check
// `executed`, send the decision followed by a half-close (socket.end) — each bounded, and every line it
// receives kept in the transcript. `serve_trial` is the exchange `run` needs, those steps in order. A test
// double that departs from them on purpose (tests/relay/misbehaving_orchestrator) composes the same steps.
#pragma once

#include "contracts/orchestrator_messages.hpp"

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/json/object.hpp>

namespace maka_eval::relay {

struct transcript {
    std::optional<boost::json::object> ready;    // as received, when it passed the orchestrator's check
    std::optional<boost::json::object> executed; // as received, when it passed the orchestrator's check
    std::vector<std::string> received;           // every line received
    std::string failure;                         // "invalid-ready", "invalid execution result", …
    bool verify_sent = false;
};

struct peer_line {
    std::optional<std::string> line; // nullopt: EOF, error or timeout
    bool timed_out = false;
};

class orchestrator_peer {
  public:
    // Listens on 127.0.0.1, on a port of the kernel's choosing.
    orchestrator_peer(const boost::asio::any_io_executor& executor, std::string token);
    [[nodiscard]] std::uint16_t port() const;
    [[nodiscard]] const std::string& token() const { return token_; }
    [[nodiscard]] transcript& seen() { return seen_; }

    // One connection, as the orchestrator's stopServer() closes the listener after it.
    boost::asio::awaitable<bool> accept();
    // The next line is a `ready` the orchestrator accepts (else failure "invalid-ready").
    boost::asio::awaitable<bool> expect_ready();
    // The next line is an `executed` the orchestrator accepts (else one of its two failures).
    boost::asio::awaitable<bool> expect_executed();
    boost::asio::awaitable<bool> send(std::string line);
    // Sends `decision` (a `verify` unless a test says otherwise), half-closes, and waits for the relay to
    // close.
    boost::asio::awaitable<void> decide(std::string decision, bool is_verify = true);
    boost::asio::awaitable<peer_line> read_line(std::chrono::milliseconds timeout);
    // Closes the connection here, saying why in the transcript.
    void close(std::string failure);

  private:
    // The next line, kept in the transcript, as a JSON object (nullopt: none came, or not an object).
    boost::asio::awaitable<std::optional<boost::json::object>> next_object();

    boost::asio::ip::tcp::acceptor acceptor_;
    boost::asio::ip::tcp::socket socket_;
    std::string buffer_;
    std::string token_;
    transcript seen_;
};

// `run`'s exchange: accept, `ready`, `execute` with `request`, `executed`, `verify`.
boost::asio::awaitable<transcript> serve_trial(orchestrator_peer& peer, contracts::execute_request request);

} // namespace maka_eval::relay
