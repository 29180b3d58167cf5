// The launcher, and the steps that make a process the subject (see spawn.hpp and launch_steps.hpp).
//
// `maka-eval-helper launch-subject …` forks the subject and exits, so that the subject is forked from a
// fresh, small process; with `--standby FD` it first waits on FD for what to launch.
#include "in_container/base/io.hpp"
#include "in_container/process/identity.hpp"
#include "in_container/process/launch_steps.hpp"
#include "in_container/process/oom_score.hpp"
#include "in_container/process/process_table.hpp"
#include "posix/executable_search.hpp"

#include <array>
#include <cerrno>
#include <charconv>
#include <climits>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <optional>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

namespace maka_eval::in_container {

bool send_status(int status_fd, char tag, int value) {
    char message[1 + sizeof(int)];
    message[0] = tag;
    std::memcpy(message + 1, &value, sizeof value);
    return write_all(status_fd, std::string_view(message, sizeof message));
}

[[noreturn]] void report_and_exit(int status_fd, char tag, int error, int exit_code) {
    (void)send_status(status_fd, tag, error);
    ::_exit(exit_code);
}

namespace {

// The launcher sends `go` just before it exits, so a subject that asked for its parent at once (a shell's
// $PPID) could still see the launcher: it waits until it is the supervisor's. The launcher's pidfd is
// readable only once its exit has reparented its children (the kernel's exit_notify does both under one
// lock); without pidfds (Linux < 5.3), or should one not open, it looks every millisecond.
void wait_until_reparented(pid_t launcher) {
    if (::getppid() != launcher) {
        return;
    }
    const posix::unique_fd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, launcher, 0)));
    // Still our parent after the open: the pidfd is the launcher's, never a later process's with its number.
    if (pidfd && ::getppid() == launcher) {
        pollfd ready{pidfd.get(), POLLIN, 0};
        while (::poll(&ready, 1, -1) < 0 && errno == EINTR) {
        }
    }
    const timespec millisecond{0, 1000000};
    while (::getppid() == launcher) {
        (void)::nanosleep(&millisecond, nullptr);
    }
}

// The first directory of `path` (absolute: from "/"; else from the working directory) that this process
// may not enter, after an EACCES on it; nullopt when each may be entered (what refused was something else).
// Asked as the subject's user, after it took it on: access(2) says what the kernel would.
std::optional<std::string> first_refused_directory(const std::string& path) {
    std::string prefix = path.starts_with('/') ? "/" : "";
    for (std::size_t at = 0; at <= path.size();) {
        const std::size_t slash = std::min(path.find('/', at), path.size());
        if (slash > at) {
            prefix.append(path, at, slash - at);
            if (slash < path.size()) {
                prefix.push_back('/');
            }
        }
        if (!prefix.empty() && ::access(prefix.c_str(), X_OK) != 0 && errno == EACCES) {
            if (prefix.size() > 1 && prefix.ends_with('/')) {
                prefix.pop_back();
            }
            return prefix;
        }
        at = slash + 1;
    }
    return std::nullopt;
}

// The subject's user may not enter `directory`: said to the supervisor ('A' and the directory's name after
// it), which reports it before the subject is said to have started; the subject never runs.
[[noreturn]] void report_refused_directory(const spawn_plan& plan, int status_fd,
                                           const std::string& directory) {
    (void)::unlinkat(plan.scope_directory, plan.scope_name.c_str(), 0);
    if (send_status(status_fd, 'A', EACCES)) {
        (void)write_all(status_fd, std::string_view(directory).substr(0, PATH_MAX));
    }
    ::_exit(126);
}

} // namespace

[[noreturn]] void become_subject(const spawn_plan& plan, int status_fd, int null_fd,
                                 const std::vector<char*>& argv, const std::vector<char*>& envp,
                                 const std::vector<std::string>& candidates,
                                 const std::vector<gid_t>& groups) {
    // Nothing the supervisor blocked or ignored may reach the subject.
    sigset_t none;
    sigemptyset(&none);
    (void)::sigprocmask(SIG_SETMASK, &none, nullptr);
    for (int sig = 1; sig < NSIG; ++sig) {
        (void)::signal(sig, SIG_DFL); // fails harmlessly for SIGKILL and SIGSTOP
    }
    ::setsid();
    if (::dup2(null_fd, STDIN_FILENO) < 0 || ::dup2(plan.stdout_fd, STDOUT_FILENO) < 0 ||
        ::dup2(plan.stderr_fd, STDERR_FILENO) < 0) {
        report_and_exit(status_fd, 'E', errno, 126);
    }
    // A terminal on stdin (run -t) becomes the new session's controlling terminal, as `docker exec -t`
    // makes it: the subject is its foreground group, Ctrl-C reaches it as SIGINT, /dev/tty opens.
    if (::isatty(STDIN_FILENO) == 1 && ::ioctl(STDIN_FILENO, TIOCSCTTY, 0) != 0) {
        report_and_exit(status_fd, 'E', errno, 126);
    }
    ::umask(077);
    // The scope is published by the supervisor's identity, where the subject cannot reach it.
    const pid_t self = ::getpid();
    const auto status = read_status(self);
    const scope_record record{self, status ? status->start_time : 0, plan.supervisor, plan.supervisor_start};
    if (!status || !publish_scope(plan.scope_directory, plan.scope_name, record)) {
        report_and_exit(status_fd, 'S', errno, 111);
    }
    // Back to what the supervisor inherited before it lowered its own (oom_score.hpp). Raising needs no
    // privilege; should it fail, the subject is merely as protected as its supervisor.
    if (plan.oom_score_adj) {
        (void)set_oom_score_adj(*plan.oom_score_adj);
    }
    if (plan.identity && !become(*plan.identity, groups)) {
        const int error = errno;
        (void)write_all(STDERR_FILENO, "maka-eval-helper: cannot take on the subject's identity: " +
                                           std::string(std::strerror(error)) + "\n");
        (void)::unlinkat(plan.scope_directory, plan.scope_name.c_str(), 0);
        report_and_exit(status_fd, 'U', error, 126);
    }
    if (!plan.cwd.empty() && ::chdir(plan.cwd.c_str()) != 0) {
        const int error = errno;
        if (error == EACCES && plan.identity) {
            if (auto refused = first_refused_directory(plan.cwd)) {
                report_refused_directory(plan, status_fd, *refused);
            }
        }
        const std::string message =
            "maka-eval-helper: cannot enter " + plan.cwd + ": " + std::strerror(error) + "\n";
        (void)write_all(STDERR_FILENO, message);
        (void)::unlinkat(plan.scope_directory, plan.scope_name.c_str(), 0);
        report_and_exit(status_fd, 'C', error, 126);
    }
    int error = ENOENT;
    const std::string* refused_at = nullptr; // the first candidate the kernel refused (EACCES)
    for (const auto& candidate : candidates) {
        ::execve(candidate.c_str(), argv.data(), envp.data());
        if (errno == EACCES && refused_at == nullptr) {
            refused_at = &candidate;
        }
        if (errno == ENOEXEC) {
            // As sh does: a file without a recognised format is a shell script.
            std::vector<char*> script{const_cast<char*>("/bin/sh"), const_cast<char*>(candidate.c_str())};
            script.insert(script.end(), argv.begin() + 1, argv.end());
            ::execve("/bin/sh", script.data(), envp.data());
            errno = ENOEXEC;
        }
        if (errno != ENOENT && errno != ENOTDIR) {
            error = errno; // EACCES and the like win over "not found", as in sh
        }
    }
    if (error == EACCES && refused_at != nullptr && plan.identity) {
        const auto slash = refused_at->rfind('/');
        if (slash != std::string::npos) {
            if (auto refused = first_refused_directory(slash == 0 ? "/" : refused_at->substr(0, slash))) {
                report_refused_directory(plan, status_fd, *refused);
            }
        }
    }
    const std::string message =
        "maka-eval-helper: cannot execute " + plan.argv.front() + ": " +
        (error == ENOENT ? std::string("not found") : std::string(std::strerror(error))) + "\n";
    (void)write_all(STDERR_FILENO, message);
    (void)::unlinkat(plan.scope_directory, plan.scope_name.c_str(), 0);
    report_and_exit(status_fd, 'E', error, error == ENOENT ? 127 : 126);
}

const char* path_in(const std::vector<char*>& envp) {
    const char* path = nullptr;
    for (const char* entry : envp) {
        if (entry != nullptr && std::string_view(entry).starts_with("PATH=")) {
            path = entry + 5; // the last one, should there be two
        }
    }
    return path;
}

// The launcher's arguments: what the child needs besides its argv and environment (which it gets as its
// own), as text. Descriptors are numbers that survive the exec; the identity is "uid:gid:g1,g2,…".
std::vector<std::string> launcher_arguments(const spawn_plan& plan, int status_fd,
                                            const std::vector<gid_t>& groups) {
    std::vector<std::string> out{"maka-eval-helper",
                                 "launch-subject",
                                 std::to_string(status_fd),
                                 std::to_string(plan.scope_directory),
                                 plan.scope_name,
                                 std::to_string(plan.supervisor),
                                 std::to_string(plan.supervisor_start),
                                 plan.oom_score_adj ? std::to_string(*plan.oom_score_adj) : "-"};
    if (plan.identity) {
        std::string identity =
            std::to_string(plan.identity->uid) + ":" + std::to_string(plan.identity->gid) + ":";
        for (std::size_t i = 0; i < groups.size(); ++i) {
            identity += (i > 0 ? "," : "") + std::to_string(groups[i]);
        }
        out.push_back(std::move(identity));
    } else {
        out.emplace_back("-");
    }
    out.push_back("=" + plan.cwd); // "=" alone: inherit
    out.emplace_back("--");
    out.insert(out.end(), plan.argv.begin(), plan.argv.end());
    return out;
}

namespace {

template <typename T>
bool number_of(std::string_view text, T& out) {
    return std::from_chars(text.data(), text.data() + text.size(), out).ec == std::errc() && !text.empty();
}

// The launcher proper. args: STATUS_FD SCOPE_DIR_FD SCOPE_NAME SUPERVISOR SUPERVISOR_START OOM IDENTITY =CWD
// -- ARGV...; `envp`, the subject's environment (null-terminated); stdin, stdout and stderr the subject's.
int launch(std::span<const std::string_view> args, const std::vector<char*>& envp) {
    int status_fd = -1;
    spawn_plan plan;
    if (args.size() < 10 || !number_of(args[0], status_fd) || !number_of(args[1], plan.scope_directory) ||
        !number_of(args[3], plan.supervisor) || !number_of(args[4], plan.supervisor_start) ||
        !args[7].starts_with("=") || args[8] != "--") {
        log_line("launch-subject: only the helper itself starts this, with what it needs");
        return 2;
    }
    plan.scope_name = std::string(args[2]);
    if (int adj = 0; args[5] != "-" && number_of(args[5], adj)) {
        plan.oom_score_adj = adj;
    }
    std::vector<gid_t> groups;
    if (args[6] != "-") {
        policy::subject_identity identity;
        const auto text = args[6];
        const auto first = text.find(':');
        const auto second = text.find(':', first + 1);
        if (first == std::string_view::npos || second == std::string_view::npos ||
            !number_of(text.substr(0, first), identity.uid) ||
            !number_of(text.substr(first + 1, second - first - 1), identity.gid)) {
            report_and_exit(status_fd, 'F', EINVAL, 126);
        }
        for (auto rest = text.substr(second + 1); !rest.empty();) {
            const auto comma = std::min(rest.find(','), rest.size());
            gid_t gid = 0;
            if (number_of(rest.substr(0, comma), gid)) {
                groups.push_back(gid);
            }
            rest.remove_prefix(std::min(comma + 1, rest.size()));
        }
        plan.identity = identity;
    }
    plan.cwd = std::string(args[7].substr(1));
    for (const auto arg : args.subspan(9)) {
        plan.argv.emplace_back(arg);
    }
    plan.stdout_fd = STDOUT_FILENO;
    plan.stderr_fd = STDERR_FILENO;
    std::vector<char*> argv;
    for (const auto& arg : plan.argv) {
        argv.push_back(const_cast<char*>(arg.c_str()));
    }
    argv.push_back(nullptr);
    const auto candidates = posix::exec_candidates(plan.argv.front(), path_in(envp));
    // The subject's exec closes these; the launcher's exit closes its own copies.
    (void)::fcntl(status_fd, F_SETFD, FD_CLOEXEC);
    (void)::fcntl(plan.scope_directory, F_SETFD, FD_CLOEXEC);
    // The subject waits for its pid to be on the status pipe before anything of its own can be: one byte on
    // `go` says it is. Should the launcher die before (killed), the subject ends without starting, rather
    // than run while its supervisor reports that it never started.
    auto go = posix::make_pipe();
    if (!go) {
        report_and_exit(status_fd, 'F', errno, 126);
    }
    const pid_t launcher = ::getpid();
    const pid_t pid = ::fork();
    if (pid == 0) {
        go.write = posix::unique_fd();
        char byte = 0;
        if (posix::read_retry(go.read.get(), &byte, 1) != 1) {
            ::_exit(126);
        }
        go.read = posix::unique_fd();
        wait_until_reparented(launcher);
        become_subject(plan, status_fd, STDIN_FILENO, argv, envp, candidates, groups);
    }
    if (pid < 0) {
        report_and_exit(status_fd, 'F', errno, 126);
    }
    if (send_status(status_fd, 'P', pid)) {
        (void)write_all(go.write.get(), "g");
    }
    // The subject is reparented to the supervisor (its subreaper) as we exit.
    ::_exit(0);
}

// `--standby FD`: what standby_launcher::start runs. Waits on FD for the plan (hand_over), takes its
// descriptors as the subject's stdin, stdout and stderr, and launches it. EOF first: dismissed, nothing to
// do.
int launch_on_standby(std::string_view fd_text) {
    int socket = -1;
    if (!number_of(fd_text, socket)) {
        return 2;
    }
    handover_header header;
    msghdr& message = header.message;
    ssize_t got = -1;
    while ((got = ::recvmsg(socket, &message, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {
    }
    if (got <= 0) {
        return 0;
    }
    std::array<int, handed_fds> fds{-1, -1, -1, -1, -1};
    const cmsghdr* rights = CMSG_FIRSTHDR(&message);
    const bool whole =
        rights != nullptr && rights->cmsg_level == SOL_SOCKET && rights->cmsg_type == SCM_RIGHTS &&
        rights->cmsg_len == CMSG_LEN(sizeof(int) * handed_fds) && (message.msg_flags & MSG_CTRUNC) == 0;
    if (whole) {
        std::memcpy(fds.data(), CMSG_DATA(rights), sizeof(int) * handed_fds);
    }
    const int status_fd = fds[3];
    // Exactly `size` more bytes into `into`, or the supervisor is told and nothing starts.
    const auto read_exactly = [socket, status_fd](char* into, std::size_t size) {
        for (std::size_t at = 0; at < size;) {
            const ssize_t n = posix::read_retry(socket, into + at, size - at);
            if (n <= 0) {
                report_and_exit(status_fd, 'F', EIO, 126);
            }
            at += static_cast<std::size_t>(n);
        }
    };
    // The rest of the length, should it have come apart, then the payload.
    if (whole && static_cast<std::size_t>(got) < sizeof header.size) {
        read_exactly(reinterpret_cast<char*>(&header.size) + got,
                     sizeof header.size - static_cast<std::size_t>(got));
    }
    if (!whole || header.size > handed_limit) {
        report_and_exit(status_fd, 'F', EINVAL, 126); // not what hand_over sends: nothing is started
    }
    std::string payload(static_cast<std::size_t>(header.size), '\0');
    read_exactly(payload.data(), payload.size());
    ::close(socket);
    for (int target = 0; target < 3; ++target) {
        if (::dup2(fds[static_cast<std::size_t>(target)], target) < 0) {
            report_and_exit(status_fd, 'F', errno, 126);
        }
    }
    for (int target = 0; target < 3; ++target) {
        if (fds[static_cast<std::size_t>(target)] > 2) {
            ::close(fds[static_cast<std::size_t>(target)]);
        }
    }
    // NUL-terminated strings: their count, the arguments, then the environment.
    std::vector<char*> strings;
    for (std::size_t at = 0; at < payload.size();) {
        strings.push_back(payload.data() + at);
        at = payload.find('\0', at);
        at = at == std::string::npos ? payload.size() : at + 1;
    }
    std::size_t count = 0;
    if (strings.empty() || !number_of(std::string_view(strings.front()), count) ||
        count + 1 > strings.size() || payload.back() != '\0') {
        report_and_exit(status_fd, 'F', EINVAL, 126);
    }
    const std::string status_text = std::to_string(status_fd);
    const std::string scope_text = std::to_string(fds[4]);
    std::vector<std::string_view> args{status_text, scope_text};
    args.insert(args.end(), strings.begin() + 1, strings.begin() + 1 + static_cast<std::ptrdiff_t>(count));
    std::vector<char*> envp(strings.begin() + 1 + static_cast<std::ptrdiff_t>(count), strings.end());
    envp.push_back(nullptr);
    return launch(args, envp);
}

} // namespace

int launch_subject_command(std::span<const std::string_view> args) {
    if (!args.empty() && args.front() == "--standby") {
        return args.size() == 2 ? launch_on_standby(args[1]) : 2;
    }
    std::vector<char*> envp;
    for (char** entry = environ; *entry != nullptr; ++entry) {
        envp.push_back(*entry);
    }
    envp.push_back(nullptr);
    return launch(args, envp);
}

} // namespace maka_eval::in_container
