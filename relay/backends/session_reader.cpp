// Establishing the helper session's only reader from the engine's host (see session_reader.hpp).
#include "relay/backends/session_reader.hpp"

#include "posix/io.hpp"
#include "relay/backends/host_cgroup.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <dirent.h>
#include <fcntl.h>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace maka_eval::relay {
namespace {

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

// One number of a /proc/PID/status text: the field's last one ("NSpid": the pid in the innermost
// namespace; "PPid", "TracerPid": their only one).
std::optional<long> status_number(std::string_view status, std::string_view field) {
    const std::string key = "\n" + std::string(field) + ":";
    const auto at = status.find(key);
    if (at == std::string_view::npos) {
        return std::nullopt;
    }
    std::string_view line = status.substr(at + key.size());
    line = line.substr(0, line.find('\n'));
    const auto last = line.find_last_of(" \t");
    const std::string_view number = last == std::string_view::npos ? line : line.substr(last + 1);
    long value = 0;
    const auto [stop, error] = std::from_chars(number.data(), number.data() + number.size(), value);
    return error == std::errc() && stop == number.data() + number.size() && !number.empty()
               ? std::optional<long>(value)
               : std::nullopt;
}

std::string status_of(long pid) {
    const auto status = posix::read_file("/proc/" + std::to_string(pid) + "/status", 1U << 16U);
    return status ? *status : std::string();
}

std::string command_of(long pid) {
    auto comm = posix::read_file("/proc/" + std::to_string(pid) + "/comm", 256);
    std::string text = comm ? *comm : std::string("?");
    while (!text.empty() && text.back() == '\n') {
        text.pop_back();
    }
    return text;
}

// Whether the executable `pid` runs has the bytes of `genuine_path`. Both mapped, not read: a running
// executable cannot be written or truncated, and reading the two megabytes into memory cost 0.45 ms of a
// cold trial.
bool runs_genuine(long pid, const std::string& genuine_path) {
    const auto ran = posix::mapped_file::of("/proc/" + std::to_string(pid) + "/exe");
    const auto ours = posix::mapped_file::of(genuine_path);
    return ran && ours && ran->bytes() == ours->bytes();
}

} // namespace

session_reader check_session_reader(long container_pid, std::string_view container_id, long helper_pid,
                                    const std::string& genuine_path) {
    if (container_pid <= 0 || container_id.size() < 12 || helper_pid <= 0) {
        return {};
    }
    const std::string namespace_link = link_of("/proc/" + std::to_string(container_pid) + "/ns/pid");
    if (!container_cgroups(container_pid, container_id) || namespace_link.empty()) {
        return {}; // not that container's process here: another host or pid namespace than the engine's
    }
    // Every process in the container's PID namespace (its execs join it), the helper among them (its status
    // kept for the checks below).
    std::vector<long> members;
    std::optional<long> helper;
    std::string helper_status;
    for (const long pid : numeric_entries("/proc")) {
        if (link_of("/proc/" + std::to_string(pid) + "/ns/pid") != namespace_link) {
            continue;
        }
        members.push_back(pid);
        if (auto status = status_of(pid); status_number(status, "NSpid") == helper_pid) {
            helper = pid;
            helper_status = std::move(status);
        }
    }
    if (!helper) {
        return {reader_verdict::not_ours, "no process with pid " + std::to_string(helper_pid) +
                                              " (the one that said hello) runs in the container"};
    }
    // Started by the engine (its parent is the runtime's shim, outside the container), not by a process of
    // the container: a forgery that runs the genuine bytes as its own child, or names a helper an earlier
    // trial left (a drainer), fails here.
    const auto parent = status_number(helper_status, "PPid");
    if (!parent || std::find(members.begin(), members.end(), *parent) != members.end()) {
        return {reader_verdict::not_ours,
                "the process that said hello (pid " + std::to_string(helper_pid) +
                    " in the container) was not started by the engine but by " +
                    (parent ? "`" + command_of(*parent) + "` in the container" : std::string("?"))};
    }
    // A tracer reads the helper's memory whatever its dumpable flag says (a forged shell's child that asked
    // to be traced, PTRACE_TRACEME, before it executed the genuine helper).
    if (const auto tracer = status_number(helper_status, "TracerPid"); !tracer || *tracer != 0) {
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
                const auto status = status_of(pid);
                // The helper's own fork (the launcher it starts ahead, in_container/process/spawn.hpp),
                // before its exec leaves only /dev/null there. Nothing else is the helper's child before
                // `run`: a process cannot choose its parent, and the helper has no other descendant to adopt.
                if (status_number(status, "PPid") == *helper && runs_genuine(pid, genuine_path)) {
                    break;
                }
                const auto inner = status_number(status, "NSpid");
                return {reader_verdict::shared,
                        "process " + (inner ? std::to_string(*inner) : std::string("?")) + " (`" +
                            command_of(pid) + "`) holds the helper's stdin open"};
            }
        }
    }
    return {reader_verdict::ours_alone, {}};
}

} // namespace maka_eval::relay
