// What became of the task container when the supervisor went quiet or its session ended, from what the
// engine says of it: before the relay acts (a fresh cancel, the destroy), it names the cause. A fault from
// outside the subject (the engine down, the container paused, restarted, stopped or out of memory) is never
// read as something the subject did, and never answered by destroying the container.
//
// A pure function over the inspect's answer, so that every case is a unit test over a recorded reply.
#pragma once

#include "relay/engine/engine_replies.hpp"
#include "relay/support/error.hpp"

#include <string>
#include <string_view>

#include <boost/system/result.hpp>

namespace maka_eval::relay {

enum class container_condition {
    running,            // as it was: whatever ended the supervisor happened inside
    memory_killed,      // running, but the engine records that the kernel killed a process of it for memory
    paused,             // docker pause: its processes are frozen, not gone
    restarted,          // running again, but started anew since the trial began: its processes ended
    stopped,            // no longer running (stopped or killed from outside)
    out_of_memory,      // no longer running, and the engine records that the kernel killed it for memory
    missing,            // the engine says it does not exist (removed)
    engine_unreachable, // the engine did not answer: nothing is known of it
};

struct container_diagnosis {
    container_condition condition = container_condition::running;
    std::string detail; // the engine's own words or values behind the verdict, for the message
};

// `inspected`: the inspect's answer now; `started_at`: State.StartedAt when the trial began ("" if unknown).
[[nodiscard]] container_diagnosis
diagnose_container(const boost::system::result<container_facts, relay_error>& inspected,
                   std::string_view started_at);

} // namespace maka_eval::relay
