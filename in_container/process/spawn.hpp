// Starting the subject: fork, and in the child setsid, stdin from /dev/null (or the pipe or terminal run -i
// and -t forward; a terminal becomes its controlling one), umask 077, publish the scope
// file (still as the supervisor, into its root-only directory), take on the subject's identity, cwd, exec.
// The subject never starts unless its scope is published (the original's C7 guarantee).
//
// The subject is forked by a fresh exec of this binary (`launch-subject`), which then exits: the subject's
// measured peak RSS is then its own, not this process's at the fork. A session starts that launcher ahead
// (standby_launcher, while it waits for `run`) and hands it the plan; otherwise the spawn forks and execs
// one. The launcher writes the subject's pid to a close-on-exec status pipe; the subject then reports how
// far it got: EOF means exec succeeded. Exec failures follow sh: 127 when the command is not found, 126
// when it cannot be run, with a message on the subject's stderr (so it lands in the stderr artifact).
#pragma once

#include "in_container/process/scope_file.hpp"
#include "policy/user_spec.hpp"
#include "posix/io.hpp"

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <sys/types.h>
#include <vector>

namespace maka_eval::in_container {

struct spawn_plan {
    std::vector<std::string> argv;
    std::vector<std::string> environment; // "NAME=VALUE", the subject's whole environment
    std::string cwd;                      // empty: inherit
    int scope_directory = -1;             // where the scope record goes (opened without following links) …
    std::string scope_name;               // … and its name there
    int stdin_fd = -1;                    // the child's stdin (a pipe, a terminal); -1: /dev/null
    int stdout_fd = -1;                   // the child's stdout (a pipe's write end or /dev/null)
    int stderr_fd = -1;
    pid_t supervisor = 0;
    std::uint64_t supervisor_start = 0;
    std::optional<policy::subject_identity> identity; // who the subject runs as; nullopt: as we are
    std::optional<int> oom_score_adj; // the subject's, set before it takes on its identity; nullopt: ours
};

enum class spawn_status {
    started,
    scope_unavailable,
    cwd_unavailable,
    identity_failed,
    directory_refused, // the subject's user may not enter a directory on its way (`blocked_directory`)
    exec_failed,
    fork_failed
};

struct spawn_outcome {
    spawn_status status = spawn_status::fork_failed;
    pid_t pid = -1;      // the leader (also the pgid); -1 when fork failed
    int error = 0;       // errno of the failed step
    pid_t launcher = -1; // the process that forked the leader, ours to reap (not the subject's); -1: none
    std::string blocked_directory{}; // directory_refused: the first one the subject's user may not enter
    unsigned own_forks = 0; // processes the spawn itself forked besides the subject (a launcher made now)
};

// A launcher started before the subject is known (`launch-subject --standby`): its fork, exec and start-up
// happen while the session waits for `run`, not on the way to `started`. It waits on a socket for the plan
// and the subject's descriptors, with none of the session's own (stdin, stdout and stderr are /dev/null
// from its first instruction on). Unused, it is killed and reaped when this goes; gone before it was used
// (killed, or /proc/self/exe not executable here), the spawn forks a launcher of its own as it always did.
class standby_launcher {
  public:
    standby_launcher() = default;
    standby_launcher(standby_launcher&& other) noexcept;
    standby_launcher& operator=(standby_launcher&&) = delete;
    standby_launcher(const standby_launcher&) = delete;
    standby_launcher& operator=(const standby_launcher&) = delete;
    ~standby_launcher() { dismiss(); }

    [[nodiscard]] static standby_launcher start();
    [[nodiscard]] pid_t pid() const { return pid_; }
    // Killed and reaped, if it was not handed a plan.
    void dismiss();

  private:
    friend spawn_outcome spawn_subject(const spawn_plan& plan, standby_launcher* standby);
    pid_t pid_ = -1;
    posix::unique_fd socket_;
};

// `standby`: a launcher started ahead, used when it is still there (then handed over: it is the outcome's
// launcher); nullptr: one forked now.
[[nodiscard]] spawn_outcome spawn_subject(const spawn_plan& plan, standby_launcher* standby = nullptr);

// `maka-eval-helper launch-subject …`: what spawn_subject's fork execs, so that the subject is forked from
// a fresh, small process (spawn.cpp says why). Not a command for people; main() runs it before anything
// else, since the descriptors it is handed must not be closed as inherited ones.
int launch_subject_command(std::span<const std::string_view> args);

} // namespace maka_eval::in_container
