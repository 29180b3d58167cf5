// The self-probe (see probe.hpp).
#include "in_container/probe.hpp"

#include "in_container/identity.hpp"
#include "in_container/io.hpp"
#include "policy/capabilities.hpp"

#include <cerrno>
#include <climits>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MAKA_EVAL_VERSION
#define MAKA_EVAL_VERSION "0.0.0"
#endif

namespace maka_eval::in_container {

contracts::hello_message probe_self() {
    contracts::hello_message hello;
    hello.helper_version = MAKA_EVAL_VERSION;
    char cwd[PATH_MAX];
    hello.cwd = ::getcwd(cwd, sizeof cwd) != nullptr ? cwd : "";
    hello.pid = ::getpid();
    hello.uid = ::getuid();
    hello.gid = ::getgid();
    if (const auto status = read_file("/proc/self/status", 1 << 16)) {
        hello.capabilities = policy::parse_status(*status);
    }
    char link[256];
    const ssize_t size = ::readlink("/proc/self/ns/net", link, sizeof link - 1);
    hello.net_namespace = size > 0 ? std::string(link, static_cast<std::size_t>(size)) : std::string();
    hello.supervisor_uid = ::geteuid();
    return hello;
}

std::optional<contracts::hello_message> probe_as(const policy::subject_identity& identity) {
    const auto groups = group_list(identity);
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
        return std::nullopt;
    }
    const pid_t pid = ::fork();
    if (pid == 0) {
        ::close(pipe_fds[0]);
        if (!become(identity, groups)) {
            ::_exit(1);
        }
        (void)write_all(pipe_fds[1], contracts::serialize(probe_self()));
        ::_exit(0);
    }
    ::close(pipe_fds[1]);
    // Without a child (fork failed) nobody holds the write end: the read ends at once, empty.
    auto text = read_all(pipe_fds[0], 1 << 20);
    ::close(pipe_fds[0]);
    int status = 0;
    while (pid > 0 && ::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!text || text->empty()) {
        return std::nullopt;
    }
    text->pop_back();
    auto message = contracts::parse_session_message(*text);
    auto* hello = message ? std::get_if<contracts::hello_message>(&*message) : nullptr;
    if (hello == nullptr) {
        return std::nullopt;
    }
    hello->pid = ::getpid();
    hello->supervisor_uid = ::geteuid();
    return *hello;
}

} // namespace maka_eval::in_container
