// Root-only state and the clean start (see root_state.hpp).
#include "in_container/process/root_state.hpp"

#include "in_container/base/io.hpp"
#include "in_container/base/text_fields.hpp"

#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <poll.h>
#include <set>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace maka_eval::in_container {
namespace {

constexpr std::string_view leftovers_name = "leftovers";
// In order of preference; /tmp only for images without a writable /run.
constexpr std::array<const char*, 2> state_candidates = {"/run/maka-eval", "/tmp/.maka-eval-state"};
constexpr auto leftover_term_grace = std::chrono::milliseconds(2000);
constexpr auto leftover_kill_grace = std::chrono::milliseconds(2000);

std::string base_name(const std::string& path) {
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

bool usable(const std::string& path) {
    if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
        return false;
    }
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0 || !S_ISDIR(info.st_mode) || info.st_uid != 0) {
        return false;
    }
    return (info.st_mode & 077) == 0 || ::chmod(path.c_str(), 0700) == 0;
}

} // namespace

std::optional<std::string> root_state_directory() {
    if (::geteuid() != 0) {
        return std::nullopt;
    }
    (void)::mkdir("/run", 0755); // FHS; a FROM-scratch image may lack it
    for (const char* candidate : state_candidates) {
        if (usable(candidate)) {
            return std::string(candidate);
        }
    }
    return std::nullopt;
}

int lock_trial(const std::string& state, const std::string& artifacts_dir) {
    const int directory = open_directory_creating(artifacts_dir, 0700);
    struct stat info {};
    const bool known = directory >= 0 && ::fstat(directory, &info) == 0;
    if (directory >= 0) {
        ::close(directory);
    }
    if (!known) {
        return -1;
    }
    const std::string path =
        state + "/trial-" + std::to_string(info.st_dev) + "-" + std::to_string(info.st_ino) + ".lock";
    const int fd = open_retry(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK, 0600);
    if (fd < 0) {
        return -1;
    }
    int locked = -1;
    do {
        locked = ::flock(fd, LOCK_EX | LOCK_NB);
    } while (locked != 0 && errno == EINTR);
    if (locked != 0) {
        const int error = errno;
        ::close(fd);
        errno = error;
        return -1;
    }
    return fd;
}

std::string scope_location(const std::string& directory, const std::string& requested) {
    return requested.empty() ? requested : directory + "/" + base_name(requested);
}

std::string find_scope(const std::string& requested) {
    if (::geteuid() != 0 || requested.empty()) {
        return requested;
    }
    for (const char* candidate : state_candidates) {
        std::string path = scope_location(candidate, requested);
        struct stat info {};
        if (::lstat(candidate, &info) == 0 && S_ISDIR(info.st_mode) && info.st_uid == 0 &&
            ::lstat(path.c_str(), &info) == 0 && S_ISREG(info.st_mode)) {
            return path;
        }
    }
    return requested;
}

void record_leftovers(const std::string& directory, const std::vector<process_status>& left) {
    const std::string path = directory + "/" + std::string(leftovers_name);
    std::string text;
    for (const auto& p : left) {
        if (is_live(p)) {
            text += std::to_string(p.pid) + ' ' + std::to_string(p.start_time) + ' ' + std::to_string(p.sid) +
                    '\n';
        }
    }
    (void)::unlink(path.c_str());
    if (text.empty()) {
        return;
    }
    const posix::unique_fd fd(open_retry(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0600));
    if (fd) {
        (void)write_all(fd.get(), text);
    }
}

leftovers_stopped stop_leftovers(const std::string& directory) {
    const std::string path = directory + "/" + std::string(leftovers_name);
    const auto text = read_file(path, 1 << 20);
    (void)::unlink(path.c_str());
    if (!text) {
        return {};
    }
    std::set<std::pair<pid_t, std::uint64_t>> recorded;
    std::set<pid_t> sessions;
    std::string_view lines = *text;
    pid_t pid = 0;
    std::uint64_t start = 0;
    pid_t sid = 0;
    while (next_number(lines, pid) && next_number(lines, start) && next_number(lines, sid)) {
        recorded.emplace(pid, start);
        if (sid > 1) {
            sessions.insert(sid);
        }
    }
    // Never our own session or an ancestor's (this exec's), and never a session whose leader pid now
    // belongs to a process that was not recorded (a new session that reused the number).
    const auto self = read_status(::getpid());
    for (const auto& p : all_processes()) {
        if (p.pid == p.sid && sessions.contains(p.sid) && is_live(p) &&
            !recorded.contains({p.pid, p.start_time})) {
            sessions.erase(p.sid);
        }
    }
    if (self) {
        sessions.erase(self->sid);
    }
    auto victims = [&] {
        std::vector<process_status> out;
        for (const auto& p : all_processes()) {
            if (p.pid > 1 && p.pid != ::getpid() && is_live(p) &&
                (recorded.contains({p.pid, p.start_time}) || sessions.contains(p.sid))) {
                out.push_back(p);
            }
        }
        return out;
    };
    auto found = victims();
    const auto count = static_cast<unsigned>(found.size());
    for (const auto& [sig, grace] :
         {std::pair{SIGTERM, leftover_term_grace}, std::pair{SIGKILL, leftover_kill_grace}}) {
        for (const auto& p : found) {
            signal_exact(p, sig);
        }
        // Not our children: nothing to wait on but /proc. Bounded, and only when something was left.
        const auto until = std::chrono::steady_clock::now() + grace;
        while (!(found = victims()).empty() && std::chrono::steady_clock::now() < until) {
            ::poll(nullptr, 0, 20);
        }
        if (found.empty()) {
            break;
        }
    }
    if (!found.empty()) {
        record_leftovers(directory, found); // not gone: still the next look's to stop
        log_line(std::to_string(found.size()) + " of " + std::to_string(count) +
                 " process(es) an earlier trial's subject left running did not end after KILL");
    } else if (count > 0) {
        log_line("stopped " + std::to_string(count) + " process(es) an earlier trial's subject left running");
    }
    return {count, static_cast<unsigned>(found.size())};
}

} // namespace maka_eval::in_container
