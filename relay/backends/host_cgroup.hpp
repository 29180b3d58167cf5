// What the kernel's memory cgroup of a container says about OOM kills, read from the engine's host: the
// evidence that a process of the container (the supervisor, say) was killed for memory while the container
// itself runs on. The engine records `State.OOMKilled` only reliably when the container's first process is
// the one killed (Debian 12's Docker 20.10 leaves it false for any other), so the relay counts the cgroup's
// own `oom_kill` before the trial and again when the supervisor vanished.
//
// cgroup v2: `oom_kill N` in the container's memory.events; v1: `oom_kill N` in memory.oom_control of its
// memory controller's directory. Both found through the container's first process's /proc/PID/cgroup,
// confirmed by the container's id in it. nullopt where this host cannot see them (a remote engine).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace maka_eval::relay {

// The cgroup file that holds the count, from a /proc/PID/cgroup text; "" when none names a memory cgroup.
// `root`: where the cgroup file systems are mounted (/sys/fs/cgroup).
[[nodiscard]] std::string oom_count_file(std::string_view proc_cgroup, std::string_view root);

// The `oom_kill N` line's N in a memory.events or memory.oom_control text.
[[nodiscard]] std::optional<std::uint64_t> parse_oom_kills(std::string_view text);

// `pid`'s /proc/PID/cgroup text when it names `container_id` (the process is that container's, seen from its
// engine's host); nullopt otherwise (another host or PID namespace, or gone).
[[nodiscard]] std::optional<std::string> container_cgroups(long pid, std::string_view container_id);

// Both, for the container whose first process is `pid` on this host.
[[nodiscard]] std::optional<std::uint64_t> host_oom_kills(long pid, std::string_view container_id);

} // namespace maka_eval::relay
