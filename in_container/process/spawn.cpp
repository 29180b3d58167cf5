// The supervisor's side of a subject's start (see spawn.hpp): the plan handed to a launcher on standby, or a
// launcher forked now, and what the status pipe says.
#include "in_container/process/spawn.hpp"

#include "contracts/secret.hpp"
#include "in_container/base/io.hpp"
#include "in_container/process/identity.hpp"
#include "in_container/process/launch_steps.hpp"
#include "posix/executable_search.hpp"

#include <array>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

namespace maka_eval::in_container {
namespace {

// Reads the status pipe to its end (EOF) or for one message; false at EOF with nothing read.
bool read_message(int fd, char (&message)[1 + sizeof(int)]) {
    std::size_t got = 0;
    while (got < sizeof message) {
        const ssize_t n = posix::read_retry(fd, message + got, sizeof message - got);
        if (n <= 0) {
            break;
        }
        got += static_cast<std::size_t>(n);
    }
    return got == sizeof message;
}

// Hands the plan to the launcher waiting on `socket`; false when it is gone.
bool hand_over(int socket, const spawn_plan& plan, const std::vector<std::string>& launch_args,
               const std::array<int, handed_fds>& fds) {
    constexpr std::size_t skipped = 4; // the binary's name, the command, the two descriptor numbers
    // Its whole size first: a string that grew would leave copies of the environment (credentials among
    // it) in the blocks it outgrew, which this process does not wipe when they are freed.
    const std::string count = std::to_string(launch_args.size() - skipped);
    std::size_t total = count.size() + 1;
    for (std::size_t i = skipped; i < launch_args.size(); ++i) {
        total += launch_args[i].size() + 1;
    }
    for (const auto& entry : plan.environment) {
        total += entry.size() + 1;
    }
    std::string payload;
    payload.reserve(total);
    const auto add = [&payload](std::string_view text) {
        payload.append(text);
        payload.push_back('\0');
    };
    add(count);
    for (std::size_t i = skipped; i < launch_args.size(); ++i) {
        add(launch_args[i]);
    }
    for (const auto& entry : plan.environment) {
        add(entry);
    }
    handover_header header;
    header.size = payload.size();
    cmsghdr* rights = CMSG_FIRSTHDR(&header.message);
    rights->cmsg_level = SOL_SOCKET;
    rights->cmsg_type = SCM_RIGHTS;
    rights->cmsg_len = CMSG_LEN(sizeof(int) * handed_fds);
    std::memcpy(CMSG_DATA(rights), fds.data(), sizeof(int) * handed_fds);
    ssize_t sent = -1;
    while ((sent = ::sendmsg(socket, &header.message, MSG_NOSIGNAL)) < 0 && errno == EINTR) {
    }
    // The rest as any write (SIGPIPE is ignored in a session: a launcher gone is EPIPE, false).
    const bool handed = sent == static_cast<ssize_t>(sizeof header.size) && write_all(socket, payload);
    contracts::wipe(payload); // the subject's environment: credentials among it
    return handed;
}

// The parent's side of the status pipe: first the subject's pid from the launcher, then EOF once the
// subject's exec succeeded (the launcher has exited by then), or what failed.
spawn_outcome outcome_of(int status_read, pid_t launcher_pid, unsigned own_forks) {
    char message[1 + sizeof(int)] = {};
    if (!read_message(status_read, message) || message[0] != 'P') {
        int error = EIO;
        if (message[0] == 'F') {
            std::memcpy(&error, message + 1, sizeof error);
        }
        return {spawn_status::fork_failed, -1, error, launcher_pid, {}, own_forks};
    }
    pid_t subject = -1;
    std::memcpy(&subject, message + 1, sizeof subject);
    // The fork became the subject where it could not exec the launcher.
    const pid_t launcher = subject == launcher_pid ? -1 : launcher_pid;
    const unsigned forks = launcher > 0 ? own_forks : 0;
    if (!read_message(status_read, message)) {
        return {spawn_status::started, subject, 0, launcher, {}, forks};
    }
    int error = 0;
    std::memcpy(&error, message + 1, sizeof error);
    switch (message[0]) {
    case 'A': {
        spawn_outcome refused{spawn_status::directory_refused, subject, error, launcher, {}, forks};
        char name[PATH_MAX];
        for (ssize_t n = 0; (n = posix::read_retry(status_read, name, sizeof name)) > 0;) {
            refused.blocked_directory.append(name, static_cast<std::size_t>(n));
        }
        return refused;
    }
    case 'S':
        return {spawn_status::scope_unavailable, subject, error, launcher, {}, forks};
    case 'C':
        return {spawn_status::cwd_unavailable, subject, error, launcher, {}, forks};
    case 'U':
        return {spawn_status::identity_failed, subject, error, launcher, {}, forks};
    default:
        return {spawn_status::exec_failed, subject, error, launcher, {}, forks};
    }
}

} // namespace

standby_launcher::standby_launcher(standby_launcher&& other) noexcept
    : pid_(other.pid_), socket_(std::move(other.socket_)) {
    other.pid_ = -1;
}

standby_launcher standby_launcher::start() {
    int ends[2] = {-1, -1};
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, ends) != 0) {
        return {};
    }
    posix::unique_fd ours(ends[0]);
    const posix::unique_fd theirs(ends[1]);
    const posix::unique_fd null_fd(open_retry("/dev/null", O_RDWR));
    char name[] = "maka-eval-helper";
    char command[] = "launch-subject";
    char standby[] = "--standby";
    char fd_text[] = "3";
    char* const argv[] = {name, command, standby, fd_text, nullptr};
    char* const envp[] = {nullptr};
    const pid_t pid = null_fd ? ::fork() : -1;
    if (pid == 0) {
        // First: none of the session's descriptors stays here (its stdin above all, which the relay checks
        // nobody but the helper holds); then the socket as descriptor 3, the only one the exec keeps.
        if (::dup2(null_fd.get(), STDIN_FILENO) < 0 || ::dup2(null_fd.get(), STDOUT_FILENO) < 0 ||
            ::dup2(null_fd.get(), STDERR_FILENO) < 0 ||
            (theirs.get() == 3 ? ::fcntl(3, F_SETFD, 0) : ::dup2(theirs.get(), 3)) < 0) {
            ::_exit(127);
        }
        ::execve("/proc/self/exe", argv, envp);
        ::_exit(127);
    }
    standby_launcher out;
    if (pid > 0) {
        out.pid_ = pid;
        out.socket_ = std::move(ours);
    }
    return out;
}

void standby_launcher::dismiss() {
    if (pid_ <= 0) {
        return;
    }
    // Unreaped, the pid is still this child's: nothing else can have it.
    (void)::kill(pid_, SIGKILL);
    socket_ = posix::unique_fd();
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
}

spawn_outcome spawn_subject(const spawn_plan& plan, standby_launcher* standby) {
    const auto groups = plan.identity ? group_list(*plan.identity) : std::vector<gid_t>();

    auto status_pipe = posix::make_pipe();
    if (!status_pipe) {
        return {spawn_status::fork_failed, -1, errno};
    }
    const posix::unique_fd null_fd(open_retry("/dev/null", O_RDWR));
    const auto launch_args = launcher_arguments(plan, status_pipe.write.get(), groups);
    const int stdin_fd = plan.stdin_fd >= 0 ? plan.stdin_fd : null_fd.get();
    if (standby != nullptr && standby->pid_ > 0 && null_fd) {
        const std::array<int, handed_fds> fds{stdin_fd, plan.stdout_fd, plan.stderr_fd,
                                              status_pipe.write.get(), plan.scope_directory};
        if (hand_over(standby->socket_.get(), plan, launch_args, fds)) {
            const pid_t launcher = standby->pid_;
            standby->pid_ = -1; // the supervisor's to reap now, as the launcher of this subject
            standby->socket_ = posix::unique_fd();
            status_pipe.write =
                posix::unique_fd(); // the launcher's and the subject's copies alone keep it open
            return outcome_of(status_pipe.read.get(), launcher, 0);
        }
        standby->dismiss(); // gone: reaped now, so that it is never taken for one of the subject's
    }
    // A launcher forked now: argv, envp, the exec candidates and the launcher's argv are built before fork.
    // The child still allocates on its failure paths (error messages) and reads /proc for its own start
    // time: safe only because the helper is single-threaded (no lock can be held by another thread at
    // fork), which it must stay.
    std::vector<char*> argv;
    for (const auto& arg : plan.argv) {
        argv.push_back(const_cast<char*>(arg.c_str()));
    }
    argv.push_back(nullptr);
    std::vector<char*> envp;
    for (const auto& entry : plan.environment) {
        envp.push_back(const_cast<char*>(entry.c_str()));
    }
    envp.push_back(nullptr);
    const auto candidates = posix::exec_candidates(plan.argv.front(), path_in(envp));
    std::vector<char*> launcher_argv;
    launcher_argv.reserve(launch_args.size() + 1);
    for (const auto& arg : launch_args) {
        launcher_argv.push_back(const_cast<char*>(arg.c_str()));
    }
    launcher_argv.push_back(nullptr);
    const pid_t pid = !null_fd ? -1 : ::fork();
    if (pid == 0) {
        // The launcher: a fresh exec of this binary forks the subject, so that what the subject's
        // processes are measured to hold (their peak RSS) starts from the launcher's few hundred KiB, not
        // from everything this process holds (a fork's child counts its parent's resident pages as its own
        // peak, and keeps that past its exec). Its stdin, stdout and stderr are the subject's already; the
        // status pipe and the scope directory stay open across the exec, nothing else does.
        ::close(status_pipe.read.get());
        const int status_fd = status_pipe.write.get();
        if (::dup2(stdin_fd, STDIN_FILENO) < 0 || ::dup2(plan.stdout_fd, STDOUT_FILENO) < 0 ||
            ::dup2(plan.stderr_fd, STDERR_FILENO) < 0) {
            report_and_exit(status_fd, 'F', errno, 126);
        }
        (void)::fcntl(status_fd, F_SETFD, 0);
        (void)::fcntl(plan.scope_directory, F_SETFD, 0);
        ::execve("/proc/self/exe", launcher_argv.data(), envp.data());
        // No /proc/self/exe to run (a noexec mount, no /proc): this process becomes the subject itself, as
        // it always did; its peak RSS then includes ours at the fork (docs/running.md).
        (void)::fcntl(status_fd, F_SETFD, FD_CLOEXEC);
        (void)::fcntl(plan.scope_directory, F_SETFD, FD_CLOEXEC);
        (void)send_status(status_fd, 'P', ::getpid());
        become_subject(plan, status_fd, stdin_fd, argv, envp, candidates, groups);
    }
    const int fork_error = errno;
    status_pipe.write = posix::unique_fd(); // the launcher's and the subject's ends alone keep it open
    if (pid < 0) {
        return {spawn_status::fork_failed, -1, fork_error};
    }
    return outcome_of(status_pipe.read.get(), pid, 1);
}

} // namespace maka_eval::in_container
