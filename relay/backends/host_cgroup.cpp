// A container's memory cgroup OOM-kill count, from the engine's host (see host_cgroup.hpp).
#include "relay/backends/host_cgroup.hpp"

#include "posix/io.hpp"

#include <charconv>

namespace maka_eval::relay {

std::string oom_count_file(std::string_view proc_cgroup, std::string_view root) {
    std::string unified;
    while (!proc_cgroup.empty()) {
        const auto end = proc_cgroup.find('\n');
        const std::string_view line = proc_cgroup.substr(0, end);
        proc_cgroup.remove_prefix(end == std::string_view::npos ? proc_cgroup.size() : end + 1);
        // ID:CONTROLLERS:PATH
        const auto first = line.find(':');
        const auto second = first == std::string_view::npos ? first : line.find(':', first + 1);
        if (second == std::string_view::npos) {
            continue;
        }
        const std::string_view controllers = line.substr(first + 1, second - first - 1);
        const std::string_view path = line.substr(second + 1);
        if (path.find("..") != std::string_view::npos || !path.starts_with('/')) {
            continue;
        }
        std::string_view rest = controllers;
        while (!rest.empty()) {
            const auto comma = rest.find(',');
            if (rest.substr(0, comma) == "memory") {
                return std::string(root) + "/memory" + std::string(path) + "/memory.oom_control";
            }
            rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma + 1);
        }
        if (line.substr(0, first) == "0" && controllers.empty()) {
            unified = std::string(root) + std::string(path) + "/memory.events";
        }
    }
    return unified;
}

std::optional<std::uint64_t> parse_oom_kills(std::string_view text) {
    constexpr std::string_view key = "oom_kill ";
    for (std::size_t at = 0; at < text.size();) {
        const auto end = text.find('\n', at);
        const std::string_view line = text.substr(at, end == std::string_view::npos ? text.npos : end - at);
        at = end == std::string_view::npos ? text.size() : end + 1;
        if (line.starts_with(key)) {
            const std::string_view number = line.substr(key.size());
            std::uint64_t value = 0;
            const auto [stop, error] = std::from_chars(number.data(), number.data() + number.size(), value);
            if (error == std::errc() && stop == number.data() + number.size()) {
                return value;
            }
        }
    }
    return std::nullopt;
}

std::optional<std::string> container_cgroups(long pid, std::string_view container_id) {
    if (pid <= 0 || container_id.size() < 12) {
        return std::nullopt;
    }
    auto groups = posix::read_file("/proc/" + std::to_string(pid) + "/cgroup", 1U << 16U);
    if (!groups || groups->find(container_id) == std::string::npos) {
        return std::nullopt;
    }
    return std::move(*groups);
}

std::optional<std::uint64_t> host_oom_kills(long pid, std::string_view container_id) {
    const auto groups = container_cgroups(pid, container_id);
    if (!groups) {
        return std::nullopt; // not that container's process here
    }
    const std::string file = oom_count_file(*groups, "/sys/fs/cgroup");
    const auto text =
        file.empty() ? boost::system::result<std::string>(std::string()) : posix::read_file(file, 1U << 16U);
    return text ? parse_oom_kills(*text) : std::nullopt;
}

} // namespace maka_eval::relay
