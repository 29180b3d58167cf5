// What the Docker engine answers, read defensively: every reply body the docker backend uses, and the
// header of each frame of an attached exec's multiplexed stream.
//
// The engine is outside our control (another version, a proxy in front of it, a broken daemon): a missing
// field or a field of another type is a clear error naming it, never an exception from deep inside
// Boost.JSON. Pure, so the fuzz target covers it (tests/fuzz/fuzz_engine_reply.cpp).
#pragma once

#include "relay/support/error.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <boost/system/result.hpp>

namespace maka_eval::relay {

// An engine reply we cannot use, said for a person.
// GET /containers/{id}/json: what the backend needs of a container.
struct container_facts {
    std::string id;
    std::string image; // Image: the image's id ("sha256:…")
    std::string user;  // Config.User: "" (root), a name, or uid[:gid]
    bool running = false;
    bool paused = false;
    bool oom_killed = false;      // State.OOMKilled: the kernel killed a process of it for memory
    long pid = 0;                 // State.Pid: its first process, in the engine's pid namespace (0: none)
    std::string started_at;       // State.StartedAt: changes when the container is restarted
    long restart_count = 0;       // RestartCount
    bool readonly_rootfs = false; // HostConfig.ReadonlyRootfs (docker run --read-only)
    std::string compose_project;  // label com.docker.compose.project, when it has one
};
[[nodiscard]] boost::system::result<container_facts, relay_error> parse_container(std::string_view body);

// POST /containers/{id}/exec: the new exec's id.
[[nodiscard]] boost::system::result<std::string, relay_error> parse_exec_id(std::string_view body);

// GET /containers/json: every listed container's id (the list is already filtered), in the engine's order.
[[nodiscard]] boost::system::result<std::vector<std::string>, relay_error>
parse_container_ids(std::string_view body);

// GET /exec/{id}/json: whether it still runs, and its exit code once it does not.
struct exec_state {
    bool running = false;
    std::optional<int> exit_code;
    std::int64_t pid = 0; // 0: never started, or (Podman) not kept after the exit
    // The exit code once the exec has certainly ended, seen from its state alone. Before its start Docker
    // says Running=false without an ExitCode, Podman says Running=false, ExitCode 0, Pid 0 — which Podman
    // also says after an exit 0. So: a non-zero code (an exec that failed to start: 126, 127), or an exit
    // 0 of a process that had a pid (Docker); an exit 0 on Podman is known from the stream's end instead.
    [[nodiscard]] std::optional<int> ended_with() const {
        if (running || !exit_code || (*exit_code == 0 && pid == 0)) {
            return std::nullopt;
        }
        return exit_code;
    }
};
[[nodiscard]] boost::system::result<exec_state, relay_error> parse_exec_state(std::string_view body);

// GET /version: ApiVersion; nullopt when the reply does not say.
[[nodiscard]] std::optional<std::string> parse_api_version(std::string_view body);

// The engine's own error text ({"message": …}), else the body's start.
[[nodiscard]] std::string engine_message(std::string_view body);

// One frame of the multiplexed exec stream: [stream, 0, 0, 0, size (big-endian u32)], then `size` bytes.
// A frame longer than this is refused, not buffered: the helper never writes more than a line at a time,
// and nothing here should fill memory on a peer's word.
inline constexpr std::size_t exec_frame_limit_bytes = std::size_t{8} << 20U;
struct frame_header {
    unsigned char stream = 0; // 0 stdin, 1 stdout, 2 stderr
    std::size_t size = 0;
};
[[nodiscard]] boost::system::result<frame_header, relay_error> parse_frame_header(std::string_view eight);

} // namespace maka_eval::relay
