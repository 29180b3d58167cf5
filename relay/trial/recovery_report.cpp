// The sentences of a recovery (see recovery_report.hpp).
#include "relay/trial/recovery_report.hpp"

namespace maka_eval::relay {

recovery_report report_recovery(recovery outcome, const std::string& what, const std::string& staged) {
    switch (outcome) {
    case recovery::settled:
        return {"cancel without the supervisor",
                "the supervisor " + what +
                    "; the subject was stopped through a fresh cancel, the environment is intact" + staged};
    case recovery::out_of_memory:
        return {"environment out of memory",
                "the environment ran out of memory while the subject ran: the kernel killed its main process "
                "(the engine records OOMKilled); nothing was left to stop, so it is left as it is for "
                "inspection" +
                    staged};
    case recovery::environment_gone:
        return {"environment no longer running",
                "the environment was stopped or removed from outside while the subject ran (its engine says "
                "it no longer runs); nothing was left to stop, so it is left as it is for inspection" +
                    staged};
    case recovery::restarted:
        return {"environment restarted",
                "the environment was restarted from outside while the subject ran (its engine records a new "
                "start); the subject's processes ended with the restart, nothing was left to stop, and the "
                "environment is left as it is" +
                    staged};
    case recovery::paused:
        // Resumed, the helper finds its input closed and settles the subject itself.
        return {"environment paused",
                "the environment was paused from outside (docker pause) and stayed paused through the "
                "teardown budget; its processes are frozen, not stopped, and it is left paused, not "
                "destroyed" +
                    staged,
                true};
    case recovery::engine_unreachable:
        return {"engine unreachable",
                "the Docker engine stopped answering while the subject ran and did not come back within the "
                "teardown budget: the subject's state is unknown (it may still be running), and nothing was "
                "stopped or destroyed" +
                    staged,
                true};
    case recovery::failed:
        break;
    }
    return {{},
            "the supervisor " + what +
                " and the subject could not be settled without it; the environment was destroyed",
            false};
}

std::string_view ending_of(recovery outcome) {
    switch (outcome) {
    case recovery::settled:
        return "settled";
    case recovery::environment_gone:
        return "environment-gone";
    case recovery::out_of_memory:
        return "out-of-memory";
    case recovery::restarted:
        return "restarted";
    case recovery::paused:
        return "paused";
    case recovery::engine_unreachable:
        return "engine-unreachable";
    case recovery::failed:
        break;
    }
    return "destroyed"; // what follows a failed recovery
}

} // namespace maka_eval::relay
