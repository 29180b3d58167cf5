// Establishing the helper session's only reader from the engine's host (see session_reader.hpp).
#include "relay/backends/session_reader.hpp"

#include "posix/io.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <dirent.h>
#include <fcntl.h>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace maka_eval::relay {
namespace {

using posix::unique_fd;

std::string link_of(const std::string& path) {
    std::array<char, 256> buffer{};
    const ssize_t size = ::readlink(path.c_str(), buffer.data(), buffer.size() - 1);
    return size > 0 ? std::string(buffer.data(), static_cast<std::size_t>(size)) : std::string();
}

std::vector<long> numeric_entries(const std::string& directory) {
    std::vector<long> out;
    DIR* listing = ::opendir(directory.c_str());
    if (listing == nullptr) {
        return out;
    }
    while (const dirent* entry = ::readdir(listing)) {
        const std::string_view name(entry->d_name);
        long value = 0;
        const auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), value);
        if (error == std::errc() && end == name.data() + name.size()) {
            out.push_back(value);
        }
    }
    ::closedir(listing);
    return out;
}

// The pid inside its innermost namespace (the last NSpid field), from /proc/PID/status.
std::optional<long> inner_pid(long pid) {
    const auto status = posix::read_file("/proc/" + std::to_string(pid) + "/status", 1U << 16U);
    if (!status) {
        return std::nullopt;
    }
    const auto at = status->find("\nNSpid:");
    if (at == std::string::npos) {
        return std::nullopt;
    }
    const auto end = status->find('\n', at + 1);
    const std::string line = status->substr(at + 7, end - at - 7);
    const auto last = line.find_last_of(" \t");
    const std::string_view field = std::string_view(line).substr(last == std::string::npos ? 0 : last + 1);
    long value = 0;
    const auto [stop, error] = std::from_chars(field.data(), field.data() + field.size(), value);
    return error == std::errc() && stop == field.data() + field.size() ? std::optional<long>(value)
                                                                       : std::nullopt;
}

// A number field of /proc/PID/status ("TracerPid", "PPid").
std::optional<long> status_number(long pid, std::string_view field) {
    const auto status = posix::read_file("/proc/" + std::to_string(pid) + "/status", 1U << 16U);
    const std::string key = "\n" + std::string(field) + ":";
    const auto at = status ? status->find(key) : std::string::npos;
    if (at == std::string::npos) {
        return std::nullopt;
    }
    const auto begin = status->find_first_not_of(" \t", at + key.size());
    const auto end = status->find('\n', begin);
    long value = 0;
    const auto [stop, error] = std::from_chars(status->data() + begin, status->data() + end, value);
    return error == std::errc() && stop == status->data() + end ? std::optional<long>(value) : std::nullopt;
}

std::string command_of(long pid) {
    auto comm = posix::read_file("/proc/" + std::to_string(pid) + "/comm", 256);
    std::string text = comm ? *comm : std::string("?");
    while (!text.empty() && text.back() == '\n') {
        text.pop_back();
    }
    return text;
}

// Whether the executable `pid` runs has the bytes of `genuine_path`.
bool runs_genuine(long pid, const std::string& genuine_path) {
    const unique_fd running(posix::open_retry("/proc/" + std::to_string(pid) + "/exe", O_RDONLY));
    const unique_fd genuine(posix::open_retry(genuine_path, O_RDONLY));
    struct stat a {};
    struct stat b {};
    if (!running || !genuine || ::fstat(running.get(), &a) != 0 || ::fstat(genuine.get(), &b) != 0 ||
        a.st_size != b.st_size) {
        return false;
    }
    std::vector<char> left(1U << 16U);
    std::vector<char> right(1U << 16U);
    while (true) {
        const ssize_t got = posix::read_retry(running.get(), left.data(), left.size());
        if (got < 0) {
            return false;
        }
        if (got == 0) {
            return posix::read_retry(genuine.get(), right.data(), 1) == 0;
        }
        std::size_t filled = 0;
        while (filled < static_cast<std::size_t>(got)) {
            const ssize_t more = posix::read_retry(genuine.get(), right.data() + filled,
                                                   static_cast<std::size_t>(got) - filled);
            if (more <= 0) {
                return false;
            }
            filled += static_cast<std::size_t>(more);
        }
        if (!std::equal(left.begin(), left.begin() + got, right.begin())) {
            return false;
        }
    }
}

} // namespace

session_reader check_session_reader(long container_pid, std::string_view container_id, long helper_pid,
                                    const std::string& genuine_path) {
    if (container_pid <= 0 || container_id.size() < 12 || helper_pid <= 0) {
        return {};
    }
    const std::string base = "/proc/" + std::to_string(container_pid);
    const auto groups = posix::read_file(base + "/cgroup", 1U << 16U);
    const std::string namespace_link = link_of(base + "/ns/pid");
    if (!groups || groups->find(container_id) == std::string::npos || namespace_link.empty()) {
        return {}; // not that container's process here: another host or pid namespace than the engine's
    }
    // Every process in the container's PID namespace (its execs join it), the helper among them.
    std::vector<long> members;
    std::optional<long> helper;
    for (const long pid : numeric_entries("/proc")) {
        if (link_of("/proc/" + std::to_string(pid) + "/ns/pid") != namespace_link) {
            continue;
        }
        members.push_back(pid);
        if (inner_pid(pid) == helper_pid) {
            helper = pid;
        }
    }
    if (!helper) {
        return {reader_verdict::not_ours, "no process with pid " + std::to_string(helper_pid) +
                                              " (the one that said hello) runs in the container"};
    }
    // Started by the engine (its parent is the runtime's shim, outside the container), not by a process of
    // the container: a forgery that runs the genuine bytes as its own child, or names a helper an earlier
    // trial left (a drainer), fails here.
    const auto parent = status_number(*helper, "PPid");
    if (!parent || std::find(members.begin(), members.end(), *parent) != members.end()) {
        return {reader_verdict::not_ours,
                "the process that said hello (pid " + std::to_string(helper_pid) +
                    " in the container) was not started by the engine but by " +
                    (parent ? "`" + command_of(*parent) + "` in the container" : std::string("?"))};
    }
    // A tracer reads the helper's memory whatever its dumpable flag says (a forged shell's child that asked
    // to be traced, PTRACE_TRACEME, before it executed the genuine helper).
    if (const auto tracer = status_number(*helper, "TracerPid"); !tracer || *tracer != 0) {
        return {reader_verdict::not_ours,
                "the helper (pid " + std::to_string(helper_pid) + " in the container) is traced by " +
                    (tracer ? "process " + std::to_string(*tracer) + " of this host" : std::string("?"))};
    }
    if (!runs_genuine(*helper, genuine_path)) {
        return {reader_verdict::not_ours, "the process that said hello (pid " + std::to_string(helper_pid) +
                                              " in the container, `" + command_of(*helper) +
                                              "`) does not run this build's maka-eval-helper"};
    }
    struct stat input {};
    if (::stat(("/proc/" + std::to_string(*helper) + "/fd/0").c_str(), &input) != 0) {
        return {};
    }
    for (const long pid : members) {
        if (pid == *helper) {
            continue;
        }
        const std::string fds = "/proc/" + std::to_string(pid) + "/fd";
        for (const long fd : numeric_entries(fds)) {
            struct stat held {};
            if (::stat((fds + "/" + std::to_string(fd)).c_str(), &held) == 0 && held.st_dev == input.st_dev &&
                held.st_ino == input.st_ino) {
                const auto inner = inner_pid(pid);
                return {reader_verdict::shared,
                        "process " + (inner ? std::to_string(*inner) : std::string("?")) + " (`" +
                            command_of(pid) + "`) holds the helper's stdin open"};
            }
        }
    }
    return {reader_verdict::ours_alone, {}};
}

} // namespace maka_eval::relay
