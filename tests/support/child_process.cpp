// Test support: line-driven child processes (see child_process.hpp).
#include "support/child_process.hpp"

#include "support/process.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <functional>
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace maka_eval::test {

child_process::child_process(const std::vector<std::string>& argv,
                             const std::optional<std::vector<std::string>>& env) {
    ::signal(SIGPIPE, SIG_IGN);
    const auto child = spawn_piped(argv, env);
    pid_ = child.pid;
    in_ = child.in;
    out_ = child.out;
    errfd_ = child.err;
}

child_process::~child_process() {
    if (pid_ > 0 && status_ < 0) {
        ::kill(pid_, SIGKILL);
        (void)wait(5000);
    }
    for (int fd : {in_, out_, errfd_}) {
        if (fd >= 0) {
            ::close(fd);
        }
    }
}

bool child_process::send(const std::string& text) {
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = ::write(in_, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        done += static_cast<std::size_t>(n);
    }
    return true;
}

void child_process::close_stdin() {
    if (in_ >= 0) {
        ::close(in_);
        in_ = -1;
    }
}

void child_process::pump(int timeout_ms) {
    pollfd fds[2] = {{out_, POLLIN, 0}, {errfd_, POLLIN, 0}};
    if (::poll(fds, 2, timeout_ms) <= 0) {
        return;
    }
    char chunk[65536];
    for (int i = 0; i < 2; ++i) {
        if (fds[i].fd >= 0 && fds[i].revents != 0) {
            const ssize_t n = ::read(fds[i].fd, chunk, sizeof chunk);
            if (n > 0) {
                (i == 0 ? buffer_ : err_).append(chunk, static_cast<std::size_t>(n));
            } else if (n == 0) {
                ::close(fds[i].fd);
                (i == 0 ? out_ : errfd_) = -1;
            }
        }
    }
}

bool child_process::stderr_shows(const std::string& needle, int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (err_.find(needle) == std::string::npos) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
                .count();
        if (errfd_ < 0 || left <= 0) {
            return false;
        }
        pump(static_cast<int>(std::min<long long>(left, 100)));
    }
    return true;
}

bool child_process::pump_until(const std::function<bool()>& enough, int timeout_ms) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!enough()) {
        const auto left =
            std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now())
                .count();
        if (out_ < 0 || left <= 0) {
            return false;
        }
        pump(static_cast<int>(left));
    }
    return true;
}

std::optional<std::string> child_process::read_line(int timeout_ms) {
    if (!pump_until([this] { return buffer_.find('\n') != std::string::npos; }, timeout_ms)) {
        return std::nullopt;
    }
    const auto newline = buffer_.find('\n');
    std::string line = buffer_.substr(0, newline);
    buffer_.erase(0, newline + 1);
    return line;
}

std::optional<std::string> child_process::read_bytes(std::size_t size, int timeout_ms) {
    if (!pump_until([this, size] { return buffer_.size() >= size; }, timeout_ms)) {
        return std::nullopt;
    }
    std::string bytes = buffer_.substr(0, size);
    buffer_.erase(0, size);
    return bytes;
}

int child_process::wait(int timeout_ms) {
    if (status_ >= 0 || pid_ <= 0) {
        return status_;
    }
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    int status = 0;
    rusage usage{};
    while (true) {
        const pid_t done = ::wait4(pid_, &status, WNOHANG, &usage);
        if (done == pid_) {
            break;
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            ::kill(pid_, SIGKILL);
            ::wait4(pid_, &status, 0, &usage);
            status_ = -1;
            return -1;
        }
        pump(10);
    }
    while (out_ >= 0 || errfd_ >= 0) {
        pump(100);
    }
    peak_rss_kib_ = usage.ru_maxrss;
    status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return status_;
}

} // namespace maka_eval::test
