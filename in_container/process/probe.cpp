// The self-probe (see probe.hpp).
#include "in_container/process/probe.hpp"

#include "in_container/base/io.hpp"
#include "in_container/process/identity.hpp"
#include "policy/capabilities.hpp"

#include <cerrno>
#include <climits>
#include <cstring>
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

boost::system::result<contracts::hello_message, std::string>
probe_as(const policy::subject_identity& identity) {
    using probed = boost::system::result<contracts::hello_message, std::string>;
    const auto refused = [](std::string why) {
        return probed(boost::system::in_place_error, std::move(why));
    };
    const auto groups = group_list(identity);
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0) {
        return refused(std::string("pipe2: ") + std::strerror(errno));
    }
    posix::unique_fd reading(pipe_fds[0]);
    posix::unique_fd writing(pipe_fds[1]);
    const pid_t pid = ::fork();
    if (pid == 0) {
        const char* failed_call = "";
        if (!become(identity, groups, &failed_call)) {
            // The cause travels on the same pipe, as a line that is not a hello.
            const int error = errno;
            (void)write_all(writing.get(), std::string(failed_call) + ": " + std::strerror(error) + "\n");
            ::_exit(1);
        }
        (void)write_all(writing.get(), contracts::serialize(probe_self()));
        ::_exit(0);
    }
    const int fork_error = errno;
    writing = posix::unique_fd(); // only the child holds the write end: the read ends with it
    if (pid < 0) {
        return refused(std::string("fork: ") + std::strerror(fork_error));
    }
    auto text = read_all(reading.get(), 1 << 20);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!text || text->empty()) {
        return refused(std::string("the probe's child said nothing (") +
                       (WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                            : "exit " + std::to_string(WEXITSTATUS(status))) +
                       ")");
    }
    text->pop_back();
    auto message = contracts::parse_session_message(*text);
    auto* hello = message ? std::get_if<contracts::hello_message>(&*message) : nullptr;
    if (hello == nullptr) {
        return refused(std::move(*text)); // the child's own words: which call failed, and why
    }
    hello->pid = ::getpid();
    hello->supervisor_uid = ::geteuid();
    return *hello;
}

} // namespace maka_eval::in_container
