// Test support: a small fork/exec runner with captured pipes and a deadline (see process.hpp).
#include "support/process.hpp"

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace maka_eval::test {

exec_arrays exec_arrays_of(const std::vector<std::string>& argv,
                           const std::optional<std::vector<std::string>>& env) {
    exec_arrays out;
    for (const auto& a : argv) {
        out.argv.push_back(const_cast<char*>(a.c_str()));
    }
    out.argv.push_back(nullptr);
    if (env) {
        for (const auto& e : *env) {
            out.envp.push_back(const_cast<char*>(e.c_str()));
        }
        out.envp.push_back(nullptr);
    }
    return out;
}

piped_child spawn_piped(const std::vector<std::string>& argv,
                        const std::optional<std::vector<std::string>>& env) {
    int in[2];
    int out[2];
    int err[2];
    if (::pipe2(in, O_CLOEXEC) != 0 || ::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0) {
        return {};
    }
    auto arrays = exec_arrays_of(argv, env);
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::dup2(in[0], 0);
        ::dup2(out[1], 1);
        ::dup2(err[1], 2);
        ::execve(arrays.argv[0], arrays.argv.data(), env ? arrays.envp.data() : environ);
        ::_exit(127);
    }
    ::close(in[0]);
    ::close(out[1]);
    ::close(err[1]);
    return {pid, in[1], out[0], err[0]};
}

process_result run_process(const std::vector<std::string>& argv, const std::string& input,
                           const std::optional<std::vector<std::string>>& env, int timeout_ms) {
    const auto child = spawn_piped(argv, env);
    if (child.pid < 0) {
        return {};
    }
    const pid_t pid = child.pid;
    int out_fd = child.out;
    int err_fd = child.err;
    ::signal(SIGPIPE, SIG_IGN);
    process_result result;
    std::size_t written = 0;
    int in_fd = child.in;
    if (input.empty()) {
        ::close(in_fd);
        in_fd = -1;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    int open_fds = 2;
    bool timed_out = false;
    while (open_fds > 0) {
        pollfd fds[3] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}, {in_fd, POLLOUT, 0}};
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
                .count();
        if (left <= 0) {
            timed_out = true;
            break;
        }
        const int ready = ::poll(fds, in_fd >= 0 ? 3 : 2, static_cast<int>(left));
        if (ready < 0 && errno == EINTR) {
            continue;
        }
        for (int i = 0; i < 2; ++i) {
            if (fds[i].fd >= 0 && (fds[i].revents & (POLLIN | POLLHUP)) != 0) {
                char buffer[65536];
                const ssize_t got = ::read(fds[i].fd, buffer, sizeof buffer);
                if (got > 0) {
                    (i == 0 ? result.out : result.err).append(buffer, static_cast<std::size_t>(got));
                } else if (got == 0 || errno != EINTR) {
                    ::close(fds[i].fd);
                    (i == 0 ? out_fd : err_fd) = -1;
                    --open_fds;
                }
            }
        }
        if (in_fd >= 0 && (fds[2].revents & (POLLOUT | POLLERR | POLLHUP)) != 0) {
            const ssize_t put = ::write(in_fd, input.data() + written, input.size() - written);
            if (put > 0) {
                written += static_cast<std::size_t>(put);
            }
            if (put < 0 && errno != EINTR && errno != EAGAIN) {
                written = input.size();
            }
            if (written == input.size()) {
                ::close(in_fd);
                in_fd = -1;
            }
        }
    }
    if (in_fd >= 0) {
        ::close(in_fd);
    }
    if (timed_out) {
        ::kill(pid, SIGKILL);
    }
    for (int fd : {out_fd, err_fd}) {
        if (fd >= 0) {
            ::close(fd);
        }
    }
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (timed_out) {
        result.exit_code = -1;
    } else if (WIFEXITED(status)) {
        result.exit_code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        result.exit_code = 128 + WTERMSIG(status);
    }
    return result;
}

} // namespace maka_eval::test
