// What `maka-eval-relay run` prints when the trial is over: a few aligned lines for a person, or one JSON
// object (--json) for a script. Both say the same: `ready`, `executed` as the orchestrator saw them, the
// subject's usage, where the artifacts are, and the relay's exit code with its name.
#pragma once

#include "relay/cli/loopback_orchestrator.hpp"
#include "relay/trial/trial.hpp"

#include <ostream>
#include <string>
#include <string_view>

namespace maka_eval::relay {

struct run_summary {
    const transcript& seen;       // the loopback orchestrator's record
    const trial_outcome& outcome; // the trial's
    bool exit_with_subject = false;
    std::string artifacts; // where they are, or what became of them (--rm)
    bool removed = false;
    std::string attestation;      // the signed result's envelope line (--sign-key), empty without
    std::string attestation_path; // where it was written (--attestation), empty if nowhere

    // The subject's own code when the trial completed with `executed` "exited", else 0.
    [[nodiscard]] std::int64_t subject_code() const;
    // The relay's exit code: the trial's, or with --exit-with-subject the subject's on a completed trial.
    [[nodiscard]] int exit_code() const;
};

[[nodiscard]] std::string_view exit_name(int code);
void print_json(std::ostream& out, const run_summary& summary);
void print_text(std::ostream& out, const run_summary& summary);

} // namespace maka_eval::relay
