// The supervisor: runs one subject to its end and reports it (`exited`), or stops its whole scope and
// reports that (`settled`).
//
// Child subreaper, so every process the subject starts stays a descendant. Streams stdout and stderr into
// the artifacts as they arrive while keeping only what the projection needs (a 64 KiB carrier, running
// SHA-256 and sizes), so memory is flat on any output volume. Everything happens in one poll loop over a
// signalfd, the relay's control pipe and the two output pipes: no sleeps, no polling of the engine.
//
// Settling — on `cancel`, on SIGTERM/SIGINT/SIGHUP, or when the control pipe reaches EOF while the subject
// still runs (the relay is gone) — sends TERM to the process group and to every live descendant, waits the
// TERM grace, sends KILL (again for anything forked meanwhile), and ends when no descendant is alive. The
// leader stays unreaped until then, so its pgid can never be reused by another process while we signal it.
// A subject that already exited is never signalled: what it left running is left for the verifier.
#pragma once

#include "contracts/session_messages.hpp"
#include "in_container/base/line_reader.hpp"
#include "in_container/process/spawn.hpp"

#include <functional>
#include <string>

#include <boost/system/result.hpp>

namespace maka_eval::in_container {

struct supervision_error {
    contracts::helper_fault code = contracts::helper_fault::spawn_failed;
    std::string message;
};

struct supervisor_io {
    int signal_fd = -1;             // from take_signals()
    line_reader* control = nullptr; // session mode: further requests (cancel), EOF = relay gone
    std::function<void(const contracts::session_message&)> emit;  // `started`, `error` (session mode)
    std::uint32_t heartbeat_ms = contracts::session_heartbeat_ms; // session mode: the interval `hello` said
    standby_launcher* launcher = nullptr; // session mode: the launcher started while `run` was awaited
};

// Runs `request` to completion. Secrets in `request` are overwritten once the subject has started.
[[nodiscard]] boost::system::result<contracts::report_message, supervision_error>
supervise(contracts::run_request& request, const supervisor_io& io);

[[noreturn]] void throw_exception_from_error(const supervision_error& e,
                                             const boost::source_location& location);

} // namespace maka_eval::in_container
