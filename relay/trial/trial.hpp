// One trial, as the original relay runs it (docs/protocol.md), on one Asio thread.
//
// The trial passes through named phases (`trial_phase` below, each one function in trial.cpp); every
// source of events — the orchestrator's lines, the helper's messages, signals — is read by its own
// coroutine into one queue, and the events every phase shares (a signal, the orchestrator gone, the helper
// session ended) are answered in one place. Settling asks the helper to stop the scope within the teardown
// budget less the destroy reserve (teardown_budget.hpp); past it the environment is destroyed, unless
// something outside the subject (a paused container, an engine that is down) explains the silence.
#pragma once

#include "contracts/orchestrator_messages.hpp"
#include "contracts/session_messages.hpp"
#include "relay/trial/backend.hpp"
#include "relay/trial/follow_sink.hpp"
#include "relay/trial/log.hpp"
#include "relay/trial/teardown_budget.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <boost/asio/awaitable.hpp>

namespace maka_eval::relay {

// The trial's phases, in the order a completed trial passes them. A cancellation or transport loss leaves
// `supervising` for `settling`; a supervisor that vanished leaves it for `recovering`; every phase may end
// the trial (`done`).
enum class trial_phase {
    connecting,      // TCP to the orchestrator, before any environment work (as the original)
    opening_session, // the helper session, until its `hello` (cwd, isolation evidence)
    gating,          // egress: the policy sidecar's namespace, the subject's evidence, the proxy pin
    offering,        // `ready` sent, waiting for one `execute`
    starting,        // the reused-environment check, then `run` to the helper
    supervising,     // the subject runs: its report, or a cancel, a lost transport, a silent supervisor
    settling,        // the helper stops the subject's scope within the budget; destroy past it
    recovering,      // the supervisor vanished: settle without it, destroy as the last resort
    reporting,       // `executed` sent: waiting for `verify`
    lingering,       // `executed` sent after a cancel: the original's second for `verify`, then close
    done,
};
[[nodiscard]] std::string_view to_string(trial_phase phase);

// What the trial needs to know, and nothing about where it came from (the command line, `run`'s loopback
// orchestrator, the benchmark): the CLI fills it in (relay/cli/).
struct trial_config {
    std::string host; // the orchestrator
    std::uint16_t port = 0;
    std::string token;       // the relay token: in every message, never logged
    std::string instruction; // sent in `ready`
    settle_graces graces{milliseconds(contracts::defaults::term_grace_ms),
                         milliseconds(contracts::defaults::kill_grace_ms),
                         milliseconds(contracts::defaults::drain_ms)};
    milliseconds teardown_budget{contracts::defaults::teardown_timeout_ms};
    bool egress_required = false;           // MAKA_EVAL_EGRESS_REQUIRED == "1"
    std::optional<std::string> egress_host; // MAKA_EVAL_EGRESS_ALLOWED_HOST
    std::string policy_sidecar;             // the service holding the network policy
    contracts::variables task_environment;  // under what `execute` sets
    std::vector<std::string> mask;          // variables masked like credentials
    std::uint64_t artifact_limit = contracts::default_artifact_limit_bytes;
    bool keep_leftovers = false;         // leave what earlier subjects left running
    bool trust_reused_container = false; // credentials may go where an earlier root subject ran
    follow_sink* follow = nullptr;       // `--follow`: where the subject's output is shown live
    // --timeout: the trial is cancelled as a framework timeout (as SIGTERM cancels it) once this elapses.
    std::optional<milliseconds> time_limit;
    std::string time_limit_text; // as given ("30s"), for what the summary says
    // run -i / -t: the subject's stdin is this descriptor of the relay's (subject_stdin.hpp), through a pipe
    // or a pseudo-terminal in the environment.
    contracts::subject_input input = contracts::subject_input::none;
    int input_fd = -1;
    // run -t on a terminal: the relay's own, for its window size (at the start and on SIGWINCH) and the
    // escape (Ctrl-] three times cancels the trial); -1: none.
    int terminal_fd = -1;
    // --sign-key: the outcome's record also carries what only a signed result needs and costs a copy or a
    // digest on the way to `started` (argv's digest, the variables' names, `executed`'s line).
    bool signed_result = false;
};

// What the relay saw of the trial, for a signed result (attestation.hpp): filled in as the phases pass.
// Never a secret: the subject's argv only as a digest, its variables and credentials only by name.
struct trial_record {
    std::string started_on;    // RFC 3339, UTC, to the millisecond: the trial's start
    std::string finished_on;   // and its end
    std::string executed_line; // `executed` exactly as sent ("\n" included); empty when none was sent
    // completed (the subject ended on its own), settled (stopped within the budget), destroyed (the
    // environment, as the last resort), refused (no subject was started), or the recovery's outcome.
    std::string ending;
    std::string helper_version;
    std::int64_t uid = -1; // the subject's, as the helper found it
    std::int64_t gid = -1;
    std::string user; // what `run` asked for (--user), empty for the environment's own
    std::string cwd;
    std::string argv_sha256; // of argv as a JSON array (the wire's writer, compact)
    std::vector<std::string> environment_names;
    std::vector<std::string> credential_names;
    std::string receipt; // the helper's receipt text, exactly as written in the artifacts directory
};

// What happened, for the exit code and for `run`'s transcript.
struct trial_outcome {
    int exit_code = 0;
    std::string message; // why, for a person; empty on success
    // What the subject consumed, when the helper reported it (never sent to the orchestrator).
    std::optional<contracts::subject_usage> usage;
    std::string stderr_tail;   // the end of the subject's stderr, when the helper reported it (for `run`)
    std::string trusted_reuse; // the earlier owner of the environment the operator accepted, if any
    trial_record record;
};

// Runs the trial; never throws for expected failures (they become the outcome).
asio::awaitable<trial_outcome> run_trial(const trial_config& config, backend& env, phase_log& log);

} // namespace maka_eval::relay
