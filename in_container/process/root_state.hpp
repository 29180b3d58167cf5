// The helper's root-only state in an environment: where the scope record lives, and the record of the
// processes that earlier trials' subjects left running.
//
// A subject must not be able to hide from a cancel (delete or rewrite its scope record) or from the next
// trial's clean start, so both live in a directory only root can enter: /run/maka-eval, else
// /tmp/.maka-eval-state, created 0700 by a root helper and used only when it is a real directory owned by
// root with no access for others (never through a symbolic link). Without root (same-uid mode) there is no
// such place and the caller's path is used as it is, which the relay logs as a weaker mode. A root subject
// could touch anything anyway, so its record stays where the relay asked for it.
#pragma once

#include "in_container/process/process_table.hpp"

#include <optional>
#include <string>
#include <vector>

namespace maka_eval::in_container {

// The root-only directory, made if missing; nullopt when not root or no candidate is usable.
[[nodiscard]] std::optional<std::string> root_state_directory();

// One trial at a time per artifacts directory: two at once would publish over each other's artifacts and
// stop each other's subjects as leftovers, which is never what a user wants. An exclusive lock on a file in
// the root-only `state` directory named for the artifacts directory's identity (device and inode), held
// until the descriptor (close-on-exec) is closed; -1 with EWOULDBLOCK when another supervisor holds it.
[[nodiscard]] int lock_trial(const std::string& state, const std::string& artifacts_dir);

// Where a root supervisor of a subject of another uid records the scope named by `requested`: its base name
// inside the root-only `directory`.
[[nodiscard]] std::string scope_location(const std::string& directory, const std::string& requested);
// Where `cancel` finds it: the root-only directory's record of that name when there is one, else `requested`.
[[nodiscard]] std::string find_scope(const std::string& requested);

// After a trial: what its subject left running, so that the next trial can stop it. Replaces the record.
void record_leftovers(const std::string& directory, const std::vector<process_status>& left);

// Before a trial: TERM, a short grace, then KILL to every recorded process still alive (same pid and start
// time) and to every process of a recorded session, and a look through /proc until they are gone. The record
// is then removed, or keeps those still alive after KILL (uninterruptible: they are not gone, so nothing
// secret may come in).
struct leftovers_stopped {
    unsigned signalled = 0; // how many processes were signalled
    unsigned remaining = 0; // how many were still alive at the end
};
leftovers_stopped stop_leftovers(const std::string& directory);

} // namespace maka_eval::in_container
