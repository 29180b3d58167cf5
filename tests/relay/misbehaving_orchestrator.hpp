// A scriptable orchestrator for tests: harness-executor.ts's exchange (relay/cli/loopback_orchestrator),
// or a departure from it on purpose at one step — another token, a line that is not JSON, a close at any
// step, a `verify` while the subject runs, a wrong decision — told by `misbehaviour`.
#pragma once

#include "relay/cli/loopback_orchestrator.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/awaitable.hpp>

namespace maka_eval::test {

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

boost::asio::awaitable<relay::transcript> serve_script(relay::orchestrator_peer& peer,
                                                       orchestrator_script script);

} // namespace maka_eval::test
