// The supervisor out of the OOM killer's way, the subject as it was.
//
// When the subject exhausts its container's memory, the kernel should kill the subject, not the supervisor
// that would report it: the helper lowers its own oom_score_adj as far as it may (-1000 with
// CAP_SYS_RESOURCE, which a default Docker container lacks; else down to what a privileged ancestor allowed,
// often 0 — and being a few MiB it is rarely the one chosen anyway), and the subject gets back exactly the
// value the helper inherited, so that the trial changes nothing of how the task's processes are treated.
#pragma once

#include <optional>

namespace maka_eval::in_container {

struct oom_protection {
    std::optional<int> inherited; // what /proc/self/oom_score_adj said at the start (nullopt: unreadable)
    bool lowered = false;         // whether ours is now lower than that
};

// Lowers this process's oom_score_adj as far as permitted; says what it was.
[[nodiscard]] oom_protection protect_from_oom();

// Sets this process's oom_score_adj to `value` (the subject's child uses it after fork: the helper is
// single-threaded, see spawn.cpp). False when it could not be written.
bool set_oom_score_adj(int value);

} // namespace maka_eval::in_container
