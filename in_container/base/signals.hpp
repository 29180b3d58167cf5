// Signals for the supervising subcommands: blocked, and taken through one signalfd in the poll loop.
//
// SIGCHLD (a child changed state), SIGTERM/SIGINT/SIGHUP/SIGQUIT (settle now: `docker stop`, `cancel`, a
// closing terminal) never run handlers; SIGPIPE is ignored so a vanished relay is an EPIPE, not a death.
// The child undoes all of it before exec (spawn.cpp).
#pragma once

#include <vector>

namespace maka_eval::in_container {

// Returns the signalfd (non-blocking, close-on-exec), or -1 with errno set.
[[nodiscard]] int take_signals();

// Every signal waiting in `signal_fd` (non-blocking), in arrival order; empty when none is.
[[nodiscard]] std::vector<int> drain_signals(int signal_fd);

} // namespace maka_eval::in_container
