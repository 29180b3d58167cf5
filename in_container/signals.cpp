// Signal set-up (see signals.hpp).
#include "in_container/signals.hpp"

#include <csignal>
#include <initializer_list>
#include <sys/signalfd.h>

namespace maka_eval::in_container {

int take_signals() {
    sigset_t set;
    sigemptyset(&set);
    for (const int sig : {SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGQUIT}) {
        sigaddset(&set, sig);
    }
    if (::sigprocmask(SIG_BLOCK, &set, nullptr) != 0) {
        return -1;
    }
    (void)::signal(SIGPIPE, SIG_IGN);
    return ::signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

} // namespace maka_eval::in_container
