// Naming what became of the task container (see container_diagnosis.hpp).
#include "relay/backends/container_diagnosis.hpp"

namespace maka_eval::relay {

container_diagnosis diagnose_container(const boost::system::result<container_facts, relay_error>& inspected,
                                       std::string_view started_at) {
    if (!inspected) {
        if (inspected.error().code == relay_errc::not_found) {
            return {container_condition::missing, inspected.error().message};
        }
        return {container_condition::engine_unreachable, inspected.error().message};
    }
    const auto& facts = *inspected;
    if (facts.paused) {
        return {container_condition::paused, "State.Paused"};
    }
    if (!facts.running) {
        if (facts.oom_killed) {
            return {container_condition::out_of_memory, "State.OOMKilled"};
        }
        return {container_condition::stopped, "State.Running false"};
    }
    if (!started_at.empty() && !facts.started_at.empty() && facts.started_at != started_at) {
        return {container_condition::restarted, "State.StartedAt " + std::string(started_at) + " -> " +
                                                    facts.started_at + ", RestartCount " +
                                                    std::to_string(facts.restart_count)};
    }
    if (facts.oom_killed) {
        return {container_condition::memory_killed, "State.OOMKilled while it runs"};
    }
    return {container_condition::running, {}};
}

} // namespace maka_eval::relay
