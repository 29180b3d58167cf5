// The kernel's process events (the proc connector), for counting the processes a subject starts on the
// host's PID namespace, where the namespace's allocation counter counts every process of the host.
//
// Listening takes CAP_NET_ADMIN in the host's network namespace (the local backend run as root); where it
// is refused, `open` fails and the supervisor falls back to a census of the subject's tree (usage_meter).
// Events are host-wide: each fork whose parent is one of the subject's processes adds its child; thread
// creation is not a process and is skipped. If the socket overflowed (a busy host), the count is marked
// inexact rather than guessed.
#pragma once

#include "posix/io.hpp"

#include <cstdint>
#include <set>
#include <sys/types.h>

namespace maka_eval::in_container {

class fork_events {
  public:
    // Subscribes; false (with errno) where the kernel refuses.
    bool open();
    [[nodiscard]] int fd() const noexcept { return socket_.get(); }
    // From now on the subject's processes are `leader` and what descends from it.
    void follow(pid_t leader) { tree_.insert(leader); }
    // Reads what is queued (non-blocking); call when poll says the socket is readable, and once at the end.
    void drain();
    [[nodiscard]] std::uint64_t processes() const noexcept { return tree_.size(); }
    [[nodiscard]] bool exact() const noexcept { return !overflowed_; }

  private:
    posix::unique_fd socket_;
    std::set<pid_t> tree_; // every process of the subject's ever seen (pids are not reused this fast)
    bool overflowed_ = false;
};

} // namespace maka_eval::in_container
