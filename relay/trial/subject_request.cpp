// What the trial decides before the subject starts (see subject_request.hpp).
#include "relay/trial/subject_request.hpp"

#include "policy/capabilities.hpp"
#include "relay/trial/subject_stdin.hpp"

#include <algorithm>
#include <tuple>

namespace maka_eval::relay {

std::string owning_power(const contracts::hello_message& hello) {
    if (hello.uid == 0) {
        return "subject uid 0";
    }
    for (const auto& [name, value] : hello.capabilities) {
        const auto set = policy::parse_hex(value);
        if ((name == "CapEff" || name == "CapPrm" || name == "CapAmb") && set && *set != 0) {
            std::string why = "subject uid " + std::to_string(hello.uid) + " with capabilities (";
            why.append(name).append(" ").append(value).append(")");
            return why;
        }
    }
    return {};
}

std::string_view supervision(const contracts::hello_message& hello) {
    if (hello.supervisor_uid == 0 && hello.uid != 0) {
        return "root";
    }
    return hello.uid == 0 ? "root-subject" : "same-uid";
}

bool brings_secrets(const contracts::execute_request& request, const trial_config& config) {
    return !request.credentials.empty() || !config.task_environment.empty();
}

std::optional<std::string> refuse_secrets(const contracts::execute_request& request,
                                          const trial_config& config, const std::string& earlier_owner) {
    if (!brings_secrets(request, config) || earlier_owner.empty() || config.trust_reused_container) {
        return std::nullopt;
    }
    const bool credentials = !request.credentials.empty();
    return std::string("this trial's ") + (credentials ? "credentials were" : "task environment was") +
           " not sent: the environment was " + earlier_owner +
           ", and what that subject left there could read " + (credentials ? "them" : "it") +
           "; use a fresh container, or pass --trust-reused-container to accept that";
}

contracts::run_request make_run_request(const contracts::execute_request& request, const trial_config& config,
                                        const settle_graces& fitted, const run_placement& placement) {
    contracts::run_request run;
    run.argv = request.argv;
    // The task's environment first, as Harbor's _merge_env does: what `execute` sets (its environment and
    // credentials) wins over an entry of the same name.
    for (const auto& task_entry : config.task_environment) {
        const auto named = [&task_entry](const auto& entry) { return entry.first == task_entry.first; };
        if (std::ranges::none_of(request.environment, named) &&
            std::ranges::none_of(request.credentials, named)) {
            run.environment.push_back(task_entry);
        }
    }
    run.environment.insert(run.environment.end(), request.environment.begin(), request.environment.end());
    run.credentials = request.credentials;
    run.result_token = request.result_token;
    run.capture_stdout = request.capture_stdout;
    run.mask = config.mask;
    run.follow = placement.follow.value_or(false);
    run.scope_path = placement.scope_path;
    run.artifacts_dir = placement.artifacts_dir;
    run.term_grace_ms = static_cast<std::uint32_t>(fitted.term.count());
    run.kill_grace_ms = static_cast<std::uint32_t>(fitted.kill.count());
    run.drain_ms = static_cast<std::uint32_t>(fitted.drain.count());
    run.artifact_limit = config.artifact_limit;
    run.keep_leftovers = config.keep_leftovers || placement.on_host;
    run.shared_pid_namespace = placement.on_host;
    run.input = config.input;
    if (const auto size = window_size(config.terminal_fd)) {
        std::tie(run.rows, run.cols) = *size;
    }
    return run;
}

} // namespace maka_eval::relay
