// /proc parsing (see process_table.hpp).
#include "in_container/process/process_table.hpp"

#include "in_container/base/io.hpp"
#include "in_container/base/text_fields.hpp"

#include <algorithm>
#include <charconv>
#include <dirent.h>
#include <map>
#include <sys/syscall.h>
#include <unistd.h>
#include <utility>

namespace maka_eval::in_container {
std::optional<process_status> parse_stat_line(const std::string& line) {
    // "pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime
    //  cutime cstime priority nice num_threads itrealvalue starttime …": comm ends at the *last* ')'.
    const auto open = line.find('(');
    const auto close = line.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open || close + 2 >= line.size()) {
        return std::nullopt;
    }
    process_status status;
    if (!parse_number(std::string_view(line).substr(0, open > 0 ? open - 1 : 0), status.pid)) {
        return std::nullopt;
    }
    std::vector<std::string_view> fields; // fields[0] is the state (field 3)
    std::string_view rest = std::string_view(line).substr(close + 2);
    while (!rest.empty() && fields.size() < 20) {
        const auto space = rest.find(' ');
        fields.push_back(rest.substr(0, space));
        rest = space == std::string_view::npos ? std::string_view() : rest.substr(space + 1);
    }
    if (fields.size() < 20 || fields[0].size() != 1) {
        return std::nullopt;
    }
    status.state = fields[0][0];
    if (!parse_number(fields[1], status.ppid) || !parse_number(fields[2], status.pgid) ||
        !parse_number(fields[3], status.sid) || !parse_number(fields[19], status.start_time)) {
        return std::nullopt;
    }
    return status;
}

std::optional<pinned_process> pinned_process::pin(pid_t pid, std::uint64_t start_time) {
    const int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (pidfd < 0) {
        return std::nullopt;
    }
    // Read after the pin: a status that matches now belongs to the pinned process.
    const auto now = read_status(pid);
    if (!now || now->start_time != start_time || !is_live(*now)) {
        ::close(pidfd);
        return std::nullopt;
    }
    return pinned_process(pidfd, *now);
}

pinned_process::pinned_process(pinned_process&& other) noexcept
    : pidfd_(std::exchange(other.pidfd_, -1)), status_(other.status_) {}

pinned_process::~pinned_process() {
    if (pidfd_ >= 0) {
        ::close(pidfd_);
    }
}

bool pinned_process::signal(int sig) const {
    return ::syscall(SYS_pidfd_send_signal, pidfd_, sig, nullptr, 0) == 0;
}

bool signal_exact(const process_status& target, int sig) {
    const auto pinned = pinned_process::pin(target.pid, target.start_time);
    return pinned && pinned->signal(sig);
}

std::optional<process_status> read_status(pid_t pid, const std::string& proc_root) {
    const auto text = read_file(proc_root + "/" + std::to_string(pid) + "/stat", 4096);
    if (!text) {
        return std::nullopt;
    }
    return parse_stat_line(*text);
}

std::vector<process_status> all_processes(const std::string& proc_root) {
    std::vector<process_status> out;
    if (DIR* dir = ::opendir(proc_root.c_str())) {
        while (const dirent* entry = ::readdir(dir)) {
            pid_t pid = 0;
            if (!parse_number(std::string_view(entry->d_name), pid)) {
                continue;
            }
            // A process may vanish between readdir and the read: it is simply not there any more.
            if (auto status = read_status(pid, proc_root)) {
                out.push_back(*status);
            }
        }
        ::closedir(dir);
    }
    return out;
}

std::vector<pid_t> children_of(pid_t pid) {
    std::vector<pid_t> out;
    const std::string tasks = "/proc/" + std::to_string(pid) + "/task";
    DIR* dir = ::opendir(tasks.c_str());
    if (dir == nullptr) {
        return out;
    }
    while (const dirent* entry = ::readdir(dir)) {
        if (entry->d_name[0] == '.') {
            continue;
        }
        const auto text = read_file(tasks + "/" + entry->d_name + "/children", 1 << 16);
        if (!text) {
            continue;
        }
        for (std::string_view rest = *text; !rest.empty();) {
            const auto space = std::min(rest.find(' '), rest.size());
            pid_t child = 0;
            if (std::from_chars(rest.data(), rest.data() + space, child).ec == std::errc() && child > 0) {
                out.push_back(child);
            }
            rest.remove_prefix(std::min(space + 1, rest.size()));
        }
    }
    ::closedir(dir);
    return out;
}

std::vector<process_status> descendants_of(pid_t ancestor, const std::string& proc_root) {
    std::multimap<pid_t, process_status> by_parent;
    for (const auto& status : all_processes(proc_root)) {
        by_parent.emplace(status.ppid, status);
    }
    std::vector<process_status> out;
    std::vector<pid_t> frontier{ancestor};
    while (!frontier.empty()) {
        const pid_t parent = frontier.back();
        frontier.pop_back();
        const auto [begin, end] = by_parent.equal_range(parent);
        for (auto it = begin; it != end; ++it) {
            out.push_back(it->second);
            frontier.push_back(it->second.pid);
        }
    }
    return out;
}

} // namespace maka_eval::in_container
