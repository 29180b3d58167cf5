// `maka-eval-helper run --request FILE`: one supervised run without an interactive relay (bridge backend).
//
// The request is a `run` message in a file the caller owns and nobody else can read (0600 or stricter);
// anything else is refused, because it holds the subject's credentials. It is unlinked as soon as it has
// been read — before the subject starts — and the final report is printed as one JSON line. SIGTERM
// (e.g. from `maka-eval-helper cancel`) settles the subject.
#include "contracts/secret.hpp"
#include "in_container/base/io.hpp"
#include "in_container/base/signals.hpp"
#include "in_container/commands/cli.hpp"
#include "in_container/commands/command_options.hpp"
#include "in_container/supervision/supervisor.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace maka_eval::in_container {
namespace {

int refuse(const std::string& message) {
    log_line("run: " + message);
    return exit_failed;
}

} // namespace

int run_command(std::span<const std::string_view> args) {
    std::string path;
    command_options options("run", "usage: maka-eval-helper run --request FILE");
    if (!options.text("--request", path).parse(args) ||
        (path.empty() && !options.usage_error("--request FILE is required"))) {
        return exit_usage;
    }
    const int fd = open_retry(path, O_RDONLY | O_NOFOLLOW);
    if (fd < 0) {
        return refuse(path + ": " + std::strerror(errno));
    }
    struct stat info {};
    if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
        ::close(fd);
        return refuse(path + " is not a regular file");
    }
    if (info.st_uid != ::geteuid() || (info.st_mode & 077) != 0) {
        ::close(fd);
        return refuse(path + " must be owned by this user and not accessible to others (mode 0600)");
    }
    auto text = read_all(fd, contracts::session_line_limit_bytes);
    ::close(fd);
    // Read once, then gone: the credentials exist in no file while the subject runs.
    if (::unlink(path.c_str()) != 0) {
        log_line("run: cannot remove " + path + ": " + std::strerror(errno));
    }
    if (!text) {
        return refuse(path + " could not be read or exceeds the size limit");
    }
    contracts::secret_text body(std::move(*text));
    while (!body.empty() && (body.view().back() == '\n' || body.view().back() == '\r')) {
        body.text().pop_back();
    }
    auto message = contracts::parse_session_message(body.view());
    body.clear();
    if (!message || !std::holds_alternative<contracts::run_request>(*message)) {
        return refuse(message ? std::string("the request is not a run message") : message.error().message());
    }
    const int signal_fd = take_signals();
    if (signal_fd < 0) {
        return refuse(std::string("signalfd: ") + std::strerror(errno));
    }
    const supervisor_io io{signal_fd, nullptr, nullptr, contracts::session_heartbeat_ms};
    auto report = supervise(std::get<contracts::run_request>(*message), io);
    if (!report) {
        (void)write_all(STDOUT_FILENO, contracts::serialize(contracts::error_message{
                                           report.error().code, report.error().message}));
        return exit_failed;
    }
    return write_all(STDOUT_FILENO, contracts::serialize(*report)) ? exit_ok : exit_failed;
}

} // namespace maka_eval::in_container
