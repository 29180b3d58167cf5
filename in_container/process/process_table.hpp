// What /proc says about processes: start times, parents, states, and the descendants of a process.
//
// The supervisor is the subject's child subreaper, so every process the subject ever started — including
// setsid'd daemons whose parents died — stays among its descendants. Settling signals exactly that set.
// Start times (field 22 of /proc/<pid>/stat) tell a live process from a later one that reused its pid.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>
#include <vector>

namespace maka_eval::in_container {

struct process_status {
    pid_t pid = 0;
    pid_t ppid = 0;
    pid_t pgid = 0;
    pid_t sid = 0;
    char state = '?';             // R, S, D, Z, T …
    std::uint64_t start_time = 0; // clock ticks after boot
};

// Alive: neither a zombie nor dead. `kill(pid, 0)` cannot tell, since it succeeds on a zombie.
[[nodiscard]] inline bool is_live(const process_status& p) {
    return p.state != 'Z' && p.state != 'X';
}

// A process held by a pidfd, so that its pid cannot be reused while we look at it and signal it: what we
// signal is the process we checked, never a later one that took its number.
class pinned_process {
  public:
    // Pins `pid` and checks that it is still the process started at `start_time` and live; nullopt if not.
    [[nodiscard]] static std::optional<pinned_process> pin(pid_t pid, std::uint64_t start_time);
    pinned_process(pinned_process&& other) noexcept;
    pinned_process& operator=(pinned_process&&) = delete;
    pinned_process(const pinned_process&) = delete;
    pinned_process& operator=(const pinned_process&) = delete;
    ~pinned_process();

    [[nodiscard]] const process_status& status() const { return status_; }
    // Readable (POLLIN) once the process has exited.
    [[nodiscard]] int fd() const { return pidfd_; }
    bool signal(int sig) const;

  private:
    pinned_process(int pidfd, const process_status& status) : pidfd_(pidfd), status_(status) {}
    int pidfd_ = -1;
    process_status status_;
};

// Sends `sig` only to the very process seen: its pid pinned by a pidfd first, then checked to still have the
// start time seen and to be live. False when it is gone (or was never signalled).
bool signal_exact(const process_status& target, int sig);

// /proc/<pid>/stat, parsed (the command name may hold spaces and parentheses).
[[nodiscard]] std::optional<process_status> read_status(pid_t pid, const std::string& proc_root = "/proc");
[[nodiscard]] std::optional<process_status> parse_stat_line(const std::string& line);

// Every process /proc shows, zombies included.
[[nodiscard]] std::vector<process_status> all_processes(const std::string& proc_root = "/proc");
// Every process below `ancestor` (not `ancestor` itself), parents before children, zombies included.
// The children of `pid` from /proc/PID/task/*/children (cheap: no scan of every process); empty when
// the kernel has no such files or the process is gone.
[[nodiscard]] std::vector<pid_t> children_of(pid_t pid);
[[nodiscard]] std::vector<process_status> descendants_of(pid_t ancestor,
                                                         const std::string& proc_root = "/proc");

} // namespace maka_eval::in_container
