// Whether the helper at its path inside a container is this build's, byte for byte, before anything runs it
// as root there: a root subject of an earlier trial may have replaced it, and a forged helper would be the
// next trial's root supervisor and read its credentials.
//
// Nothing inside the container can be asked (a root subject may have changed any program there), so the copy
// is read from outside. On the engine's host the container's files are reached through its first process
// (/proc/PID/root, the pid the engine reports, confirmed by the container's id in that very process's
// cgroup): a read of the local page cache, about a millisecond. Elsewhere (a remote engine, another pid
// namespace, no privilege to look) the engine's archive download is compared instead, which costs the
// engine's archive operation (tens of milliseconds).
#pragma once

#include "posix/io.hpp"

#include <optional>
#include <string>
#include <string_view>
#include <sys/types.h>

namespace maka_eval::relay {

enum class installed_copy {
    absent,  // nothing at the path
    genuine, // a regular file, writable by its owner only, with this build's bytes
    other,   // anything else: other bytes, a link, a directory, a FIFO, a file others may write
    // Not looked at: where this host cannot look and a trial ran before, the docker backend writes the
    // helper in again through the engine rather than read it back (never a comparison's verdict).
    unchecked,
};

// The copy at `path_in_container` (absolute, no `.` or `..`) of the container whose first process is `pid`
// and whose id is `container_id`, against the file at `genuine_path`; no link is followed on the way. In
// steps, so that a coroutine can let the engine's answers in between: the constructor looks the copy up,
// each step() compares the next 64 KiB of content.
class host_comparison {
  public:
    host_comparison(long pid, std::string_view container_id, std::string_view path_in_container,
                    const std::string& genuine_path);
    // Compares the next chunk; false once the verdict is known.
    bool step();
    // Once step() returned false: nullopt when the container's files cannot be reached from here.
    [[nodiscard]] std::optional<installed_copy> verdict() const { return verdict_; }

  private:
    void look_up(long pid, std::string_view container_id, std::string_view path_in_container,
                 const std::string& genuine_path);
    std::optional<installed_copy> verdict_;
    bool comparing_ = false;
    posix::unique_fd copy_;
    posix::unique_fd genuine_;
    off_t size_ = 0;
    off_t at_ = 0;
};

// host_comparison's steps all at once.
[[nodiscard]] std::optional<installed_copy> compare_on_this_host(long pid, std::string_view container_id,
                                                                 std::string_view path_in_container,
                                                                 const std::string& genuine_path);

// The engine's download of the path (GET /containers/{id}/archive) against this build's SHA-256.
[[nodiscard]] installed_copy compare_download(std::string_view archive, std::string_view genuine_sha256);

} // namespace maka_eval::relay
