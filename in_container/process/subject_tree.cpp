// Signalling and watching the subject's process tree (see subject_tree.hpp).
#include "in_container/process/subject_tree.hpp"

#include <algorithm>
#include <csignal>
#include <sys/wait.h>
#include <unistd.h>

namespace maka_eval::in_container {

void subject_tree::signal(int sig) {
    const auto descendants = descendants_of(::getpid());
    // The group first: the leader, alive or a zombie, keeps the pgid ours.
    const bool group_signalled = leader_ > 0 && ::kill(-leader_, sig) == 0; // never -(-1) or 0: all or ours
    if (group_signalled) {
        signalled_.insert(leader_);
    }
    for (const auto& process : descendants) {
        if (!is_live(process)) {
            continue;
        }
        if (process.pgid == leader_ ? group_signalled : signal_exact(process, sig)) {
            signalled_.insert(process.pid);
        }
    }
}

bool subject_tree::quiet(bool leader_gone) const {
    if (!leader_gone) {
        return false;
    }
    const auto descendants = descendants_of(::getpid());
    return std::none_of(descendants.begin(), descendants.end(), [](const auto& p) { return is_live(p); });
}

std::vector<process_status> subject_tree::left_running(pid_t except) const {
    auto left = descendants_of(::getpid());
    std::erase_if(left,
                  [this, except](const process_status& p) { return p.pid == except || p.pid == leader_; });
    return left;
}

void subject_tree::reap_others(const std::function<void(pid_t, const rusage&)>& reaped) const {
    for (const auto& process : descendants_of(::getpid())) {
        if (process.ppid == ::getpid() && process.pid != leader_ && process.state == 'Z') {
            rusage usage{};
            if (::wait4(process.pid, nullptr, WNOHANG, &usage) == process.pid) {
                reaped(process.pid, usage);
            }
        }
    }
}

} // namespace maka_eval::in_container
