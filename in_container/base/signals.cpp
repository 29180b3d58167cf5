// Signal set-up (see signals.hpp).
#include "in_container/base/signals.hpp"

#include <csignal>
#include <initializer_list>
#include <sys/signalfd.h>
#include <unistd.h>

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

std::vector<int> drain_signals(int signal_fd) {
    std::vector<int> taken;
    signalfd_siginfo info{};
    // A signalfd read is all or nothing per record; EINTR cannot happen with every handled signal blocked,
    // and EAGAIN ends the drain.
    while (::read(signal_fd, &info, sizeof info) == static_cast<ssize_t>(sizeof info)) {
        taken.push_back(static_cast<int>(info.ssi_signo));
    }
    return taken;
}

} // namespace maka_eval::in_container
