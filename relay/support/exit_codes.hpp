// maka-eval-relay's exit codes: what the trial runner's adapter (relay/harbor/) maps back onto the
// original's outcomes (return, raise, re-raise the cancellation).
#pragma once

namespace maka_eval::relay {

enum exit_code : int {
    exit_success = 0,  // `verify` received (original: run() returned)
    exit_internal = 1, // a bug or an unexpected failure
    exit_usage = 2,    // bad command line or configuration (e.g. invalid teardown timeout)
    exit_transport_lost =
        3,            // the orchestrator closed or misbehaved; the subject was settled (original: returned)
    exit_refused = 4, // an invalid `execute` or decision (original: raised)
    exit_environment = 5,   // cwd unresolvable, egress gate refusal, helper unusable (original: raised)
    exit_cancelled = 6,     // SIGTERM: framework timeout (original: re-raised CancelledError)
    exit_host_teardown = 7, // SIGINT: host teardown (original: re-raised CancelledError)
};

} // namespace maka_eval::relay
