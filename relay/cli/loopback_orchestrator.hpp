// A loopback orchestrator: the TCP peer of `maka-eval-relay run`, and a scriptable double for tests.
//
// It behaves as harness-executor.ts does — accept one connection, check `ready`, send `execute`, check
// `executed`, send `verify` followed by a half-close (socket.end) — or misbehaves on purpose at one step.
// Every line it receives and sends is kept in the transcript.
#pragma once

#include "contracts/orchestrator_messages.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/json/object.hpp>

namespace maka_eval::relay {

enum class misbehaviour {
    none,
    wrong_token,          // `execute` with another relay token
    wrong_kind,           // a `verify` where `execute` belongs
    garbage,              // a line that is not JSON
    huge_line,            // a 10 MiB line
    close_after_accept,   // close before `ready` arrives
    close_after_ready,    // close instead of sending `execute`
    close_during_run,     // close while the subject runs
    control_during_run,   // send `verify` while the subject runs
    close_after_executed, // close instead of sending `verify`
    bad_decision,         // a wrong-kind decision after `executed`
};

[[nodiscard]] std::optional<misbehaviour> misbehaviour_from(std::string_view name);

struct orchestrator_script {
    contracts::execute_request request;
    misbehaviour act = misbehaviour::none;
    std::uint32_t during_run_delay_ms = 300; // for close_during_run / control_during_run
    std::uint32_t verify_delay_ms = 0;
    // Told "ready" and "executed" as each arrives (tests wait for these instead of sleeping).
    std::function<void(std::string_view)> on_event;
    std::optional<std::string>
        raw_execute;   // an `execute` object sent as is (its token set), for refusal tests
    bool hold = false; // never send `execute` (to cancel a relay that waits for it)
};

struct transcript {
    std::optional<boost::json::object> ready;    // as received, when it passed the orchestrator's check
    std::optional<boost::json::object> executed; // as received, when it passed the orchestrator's check
    std::vector<std::string> received;           // every line received
    std::string failure;                         // "invalid-ready", "invalid execution result", …
    bool verify_sent = false;
};

class loopback_orchestrator {
  public:
    loopback_orchestrator(const boost::asio::any_io_executor& executor, std::string token,
                          orchestrator_script script);
    [[nodiscard]] std::uint16_t port() const;
    boost::asio::awaitable<transcript> serve();

  private:
    boost::asio::ip::tcp::acceptor acceptor_;
    std::string token_;
    orchestrator_script script_;
};

} // namespace maka_eval::relay
