// The drainer process (see background_drainer.hpp).
#include "in_container/capture/background_drainer.hpp"

#include "posix/io.hpp"

#include <cerrno>
#include <csignal>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

namespace maka_eval::in_container {
namespace {

[[noreturn]] void drain(captured_stream& out, captured_stream& err) {
    char buffer[65536];
    while (out.fd >= 0 || err.fd >= 0) {
        pollfd fds[2] = {{out.fd, POLLIN, 0}, {err.fd, POLLIN, 0}};
        if (::poll(fds, 2, -1) < 0 && errno != EINTR) {
            break;
        }
        for (int i = 0; i < 2; ++i) {
            captured_stream& s = i == 0 ? out : err;
            if (s.fd < 0 || fds[i].revents == 0) {
                continue;
            }
            const ssize_t got = posix::read_retry(s.fd, buffer, sizeof buffer);
            std::string_view shown;
            if (got > 0) {
                (void)s.pass({buffer, static_cast<std::size_t>(got)}, shown);
            } else {
                s.close_pipe();
                (void)s.finish(shown);
            }
        }
    }
    ::_exit(0);
}

} // namespace

pid_t drain_in_background(captured_stream& out, captured_stream& err,
                          std::initializer_list<int> close_in_child) {
    if (out.fd < 0 && err.fd < 0) {
        return -1;
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
        // The drainer must not hold the relay's pipes (our stdin, stdout, stderr) or the session never ends.
        const int null_fd = posix::open_retry("/dev/null", O_RDWR);
        for (int fd = 0; fd <= 2; ++fd) {
            ::dup2(null_fd, fd);
        }
        for (const int fd : close_in_child) {
            if (fd >= 0) {
                ::close(fd);
            }
        }
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        drain(out, err);
    }
    out.close_pipe();
    err.close_pipe();
    return pid;
}

} // namespace maka_eval::in_container
