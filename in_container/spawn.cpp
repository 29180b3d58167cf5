// Subject start-up (see spawn.hpp).
#include "in_container/spawn.hpp"

#include "in_container/identity.hpp"
#include "in_container/io.hpp"
#include "in_container/oom_score.hpp"
#include "in_container/process_table.hpp"
#include "posix/executable_search.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace maka_eval::in_container {
namespace {

// Child → parent: one tag byte and the errno.
[[noreturn]] void report_and_exit(int status_fd, char tag, int error, int exit_code) {
    char message[1 + sizeof(int)];
    message[0] = tag;
    std::memcpy(message + 1, &error, sizeof error);
    (void)write_all(status_fd, std::string_view(message, sizeof message));
    ::_exit(exit_code);
}

[[noreturn]] void child(const spawn_plan& plan, int status_fd, int null_fd, const std::vector<char*>& argv,
                        const std::vector<char*>& envp, const std::vector<std::string>& candidates,
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
        const std::string message =
            "maka-eval-helper: cannot enter " + plan.cwd + ": " + std::strerror(error) + "\n";
        (void)write_all(STDERR_FILENO, message);
        (void)::unlinkat(plan.scope_directory, plan.scope_name.c_str(), 0);
        report_and_exit(status_fd, 'C', error, 126);
    }
    int error = ENOENT;
    for (const auto& candidate : candidates) {
        ::execve(candidate.c_str(), argv.data(), envp.data());
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
    const std::string message =
        "maka-eval-helper: cannot execute " + plan.argv.front() + ": " +
        (error == ENOENT ? std::string("not found") : std::string(std::strerror(error))) + "\n";
    (void)write_all(STDERR_FILENO, message);
    (void)::unlinkat(plan.scope_directory, plan.scope_name.c_str(), 0);
    report_and_exit(status_fd, 'E', error, error == ENOENT ? 127 : 126);
}

} // namespace

spawn_outcome spawn_subject(const spawn_plan& plan) {
    // argv, envp, the exec candidates and the groups are built before fork. The child still allocates on its
    // failure paths (error messages) and reads /proc for its own start time: safe only because the helper
    // is single-threaded (no lock can be held by another thread at fork), which it must stay.
    std::vector<char*> argv;
    for (const auto& arg : plan.argv) {
        argv.push_back(const_cast<char*>(arg.c_str()));
    }
    argv.push_back(nullptr);
    std::vector<char*> envp;
    const char* path = nullptr;
    for (const auto& entry : plan.environment) {
        envp.push_back(const_cast<char*>(entry.c_str()));
        if (entry.starts_with("PATH=")) {
            path = entry.c_str() + 5;
        }
    }
    envp.push_back(nullptr);
    const auto candidates = posix::exec_candidates(plan.argv.front(), path);
    const auto groups = plan.identity ? group_list(*plan.identity) : std::vector<gid_t>();

    auto status_pipe = posix::make_pipe();
    if (!status_pipe) {
        return {spawn_status::fork_failed, -1, errno};
    }
    const posix::unique_fd null_fd(open_retry("/dev/null", O_RDWR));
    const pid_t pid = !null_fd ? -1 : ::fork();
    if (pid == 0) {
        ::close(status_pipe.read.get()); // the child never returns: it execs or _exits
        child(plan, status_pipe.write.get(), null_fd.get(), argv, envp, candidates, groups);
    }
    const int fork_error = errno;
    status_pipe.write = posix::unique_fd(); // the child's end alone keeps it open, until its exec
    if (pid < 0) {
        return {spawn_status::fork_failed, -1, fork_error};
    }
    char message[1 + sizeof(int)] = {};
    std::size_t got = 0;
    while (got < sizeof message) {
        const ssize_t n = posix::read_retry(status_pipe.read.get(), message + got, sizeof message - got);
        if (n <= 0) {
            break;
        }
        got += static_cast<std::size_t>(n);
    }
    if (got == 0) {
        return {spawn_status::started, pid, 0};
    }
    int error = 0;
    std::memcpy(&error, message + 1, sizeof error);
    switch (message[0]) {
    case 'S':
        return {spawn_status::scope_unavailable, pid, error};
    case 'C':
        return {spawn_status::cwd_unavailable, pid, error};
    case 'U':
        return {spawn_status::identity_failed, pid, error};
    default:
        return {spawn_status::exec_failed, pid, error};
    }
}

} // namespace maka_eval::in_container
