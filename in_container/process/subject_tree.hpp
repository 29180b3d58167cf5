// The subject's processes as their supervisor sees them: the leader's process group and every descendant
// (the supervisor is their child subreaper, so setsid'd daemons stay among them). Settling signals exactly
// this set and ends when nothing in it is alive; what the subject leaves running after a normal exit is
// read from here for the next trial's clean start.
#pragma once

#include "in_container/process/process_table.hpp"

#include <cstddef>
#include <functional>
#include <set>
#include <sys/resource.h>
#include <sys/types.h>
#include <vector>

namespace maka_eval::in_container {

class subject_tree {
  public:
    subject_tree() = default;
    explicit subject_tree(pid_t leader) : leader_(leader) {}

    // `sig` to the leader's group, then to every live descendant outside it (each pinned and checked before
    // it is signalled). The descendants are listed first: what the subject starts in response (a TERM trap
    // writing its last frame) is not hit by the same round.
    void signal(int sig);
    // Nothing of the subject is alive (the leader has exited and no descendant lives).
    [[nodiscard]] bool quiet(bool leader_gone) const;
    // How many distinct processes were ever signalled.
    [[nodiscard]] std::size_t signalled() const { return signalled_.size(); }
    // Our live descendants other than the leader and `except` (the drainer): what the subject left running.
    [[nodiscard]] std::vector<process_status> left_running(pid_t except) const;
    // Reaps our dead children other than the leader, which stays a zombie so its pgid is not reused while we
    // signal the group; `reaped` hears each one's pid and usage.
    void reap_others(const std::function<void(pid_t, const rusage&)>& reaped) const;

  private:
    pid_t leader_ = -1;
    std::set<pid_t> signalled_;
};

} // namespace maka_eval::in_container
