// Who can read what the relay is about to write into a helper session, established from the engine's host
// before anything secret (`run`: credentials, the result token, the task's environment) is sent.
//
// Nothing inside the container can vouch for it: a root subject of an earlier trial may have replaced the
// helper at its path (a swap between the relay's comparison and the exec), the shell a cold install runs, or
// left a process that opened the helper's stdin through /proc. The host's /proc cannot be forged from
// inside: every process in the container's PID namespace is found there, the one the helper's `hello` names
// (its pid in that namespace, NSpid) must have been started by the engine (its parent outside the container),
// run this build's bytes (/proc/PID/exe compared with the genuine file), be traced by nobody (TracerPid), and
// no other process of the container may hold the pipe that is its stdin. Once this holds, the
// helper (which made itself non-dumpable before `hello`) cannot have its stdin opened by a root process
// without CAP_SYS_PTRACE, which Docker does not grant by default.
//
// On a remote engine (or without the privilege to look) nothing can be established: `unreachable`, and the
// relay relies on its record of which containers root subjects owned (docs/security.md).
#pragma once

#include <string>
#include <string_view>
#include <sys/types.h>

namespace maka_eval::relay {

enum class reader_verdict {
    ours_alone,  // this build's helper, and no other process of the container holds its stdin
    not_ours,    // the process that says hello runs other bytes (a forged helper, a shell), or is traced
    shared,      // another process of the container holds the helper's stdin
    unreachable, // the container's processes cannot be seen from here
};

struct session_reader {
    reader_verdict verdict = reader_verdict::unreachable;
    std::string detail; // for the message: which process, and what it runs
};

// `container_pid`: the container's first process as the engine reports it (State.Pid), confirmed by
// `container_id` in its cgroup; `helper_pid`: the helper's pid inside the container (hello.pid);
// `genuine_path`: this build's helper on this host.
[[nodiscard]] session_reader check_session_reader(long container_pid, std::string_view container_id,
                                                  long helper_pid, const std::string& genuine_path);

} // namespace maka_eval::relay
