// One trial, as the original relay runs it (docs/protocol.md), on one Asio thread.
//
// connect → helper session and `hello` (cwd) → egress gate → `ready` → `execute` (validated in the
// original's order) → `run` to the helper → the first of: the subject's report, a control line or EOF from
// the orchestrator (transport loss: settle, no `executed`), SIGTERM (framework timeout) or SIGINT (host
// teardown) → `executed` → `verify`. Settling asks the helper to stop the scope within the teardown budget
// less the stop reserve (min(20 s, 20 %)); past it the environment is destroyed.
#pragma once

#include "relay/trial/backend.hpp"
#include "relay/trial/follow_sink.hpp"
#include "relay/trial/log.hpp"
#include "relay/trial/options.hpp"

#include <functional>
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

namespace maka_eval::relay {

// What `connect` was given (or what `run` made up for its loopback orchestrator), and, for `run --follow`,
// where the subject's output is shown as it comes.
struct trial_config : connect_options {
    follow_sink* follow = nullptr;
};

// What happened, for the exit code and for `run`'s transcript.
struct trial_outcome {
    int exit_code = 0;
    std::string message; // why, for a person; empty on success
    // What the subject consumed, when the helper reported it (never sent to the orchestrator).
    std::optional<contracts::subject_usage> usage;
    std::string stderr_tail;   // the end of the subject's stderr, when the helper reported it (for `run`)
    std::string trusted_reuse; // the earlier owner of the environment the operator accepted, if any
};

// Runs the trial; never throws for expected failures (they become the outcome).
asio::awaitable<trial_outcome> run_trial(const trial_config& config, backend& env, phase_log& log);

} // namespace maka_eval::relay
