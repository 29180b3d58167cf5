// What the trial decides about the subject before it starts: who will own the environment, whether this
// trial's secrets may go in, and the `run` request the helper gets.
//
// Pure functions of the orchestrator's `execute`, the helper's `hello`, the trial's config and what the
// backend knows, so that each rule is stated (and tested) once, apart from the trial's event handling.
#pragma once

#include "contracts/orchestrator_messages.hpp"
#include "contracts/session_messages.hpp"
#include "relay/trial/teardown_budget.hpp"
#include "relay/trial/trial.hpp"

#include <optional>
#include <string>

namespace maka_eval::relay {

// Why a subject described by `hello` will own its environment: root, or a non-root uid holding capabilities
// (it can change what root's next session runs). Empty when neither.
[[nodiscard]] std::string owning_power(const contracts::hello_message& hello);

// Whether the subject can reach its supervisor, for the log: "root" (out of its reach), "same-uid" (no root
// exec here: within its reach), "root-subject" (a root subject can signal anything in its PID namespace).
[[nodiscard]] std::string_view supervision(const contracts::hello_message& hello);

// Whether the trial sends secrets into the environment: credentials, or the task's own environment.
[[nodiscard]] bool brings_secrets(const contracts::execute_request& request, const trial_config& config);

// A reused environment an earlier subject owned (root there, or no record of who ran there): what it left
// may read whatever this trial sends. The refusal, when secrets would go in and the operator did not accept
// that; nullopt when they may go.
[[nodiscard]] std::optional<std::string> refuse_secrets(const contracts::execute_request& request,
                                                        const trial_config& config,
                                                        const std::string& earlier_owner);

// Where the backend puts the scope file and the artifacts, and whether the subject's output is followed.
struct run_placement {
    std::string scope_path;
    std::string artifacts_dir;
    std::optional<bool> follow; // nullopt: not asked for
    bool on_host = false;       // the local backend: nothing an earlier run left is ours to stop
};

// The `run` request: the task's environment under `execute`'s (as Harbor's _merge_env), the graces fitted
// into the teardown budget (`fitted`), the placement. Holds secrets: the caller wipes it once serialized.
[[nodiscard]] contracts::run_request make_run_request(const contracts::execute_request& request,
                                                      const trial_config& config, const settle_graces& fitted,
                                                      const run_placement& placement);

} // namespace maka_eval::relay
