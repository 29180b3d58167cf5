// The installed helper's check (see installed_helper.hpp).
#include "relay/backends/installed_helper.hpp"

#include "contracts/digest.hpp"
#include "posix/io.hpp"
#include "relay/engine/tar_archive.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace maka_eval::relay {
namespace {

// A descriptor closed when it goes out of scope.
using posix::unique_fd;

// Up to `size` bytes at `offset`, retrying EINTR and short reads; how many arrived (fewer only at the end),
// -1 on an error.
ssize_t read_at(int fd, char* into, std::size_t size, off_t offset) {
    std::size_t got = 0;
    while (got < size) {
        const auto n = ::pread(fd, into + got, size - got, offset + static_cast<off_t>(got));
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n < 0) {
            return -1;
        }
        if (n == 0) {
            break;
        }
        got += static_cast<std::size_t>(n);
    }
    return static_cast<ssize_t>(got);
}

// Same size, same bytes.
bool same_content(int a, int b, off_t size) {
    std::array<char, 65536> x{};
    std::array<char, 65536> y{};
    for (off_t at = 0; at < size;) {
        const auto want = static_cast<std::size_t>(std::min<off_t>(size - at, static_cast<off_t>(x.size())));
        const auto from_a = read_at(a, x.data(), want, at);
        const auto from_b = read_at(b, y.data(), want, at);
        if (from_a != static_cast<ssize_t>(want) || from_b != static_cast<ssize_t>(want) ||
            std::char_traits<char>::compare(x.data(), y.data(), want) != 0) {
            return false;
        }
        at += static_cast<off_t>(want);
    }
    return true;
}

} // namespace

std::optional<installed_copy> compare_on_this_host(long pid, std::string_view container_id,
                                                   std::string_view path_in_container,
                                                   const std::string& genuine_path) {
    if (pid <= 0 || container_id.size() < 12 || !path_in_container.starts_with('/')) {
        return std::nullopt;
    }
    // One descriptor for the process: its cgroup and its root are then that process's, even if the pid
    // were reused meanwhile (the opens below fail once it is gone).
    const unique_fd process(posix::open_retry("/proc/" + std::to_string(pid), O_PATH | O_DIRECTORY));
    if (!process) {
        return std::nullopt;
    }
    const unique_fd cgroup(posix::open_retry("cgroup", O_RDONLY, 0, process.get()));
    if (!cgroup) {
        return std::nullopt;
    }
    const auto groups = posix::read_all(cgroup.get(), 1U << 16U);
    if (!groups || groups->find(container_id) == std::string::npos) {
        return std::nullopt; // not that container's process: another pid namespace than the engine's
    }
    unique_fd directory(posix::open_retry("root", O_PATH | O_DIRECTORY, 0, process.get()));
    if (!directory) {
        return std::nullopt; // no privilege to look into the container
    }
    // Component by component, never through a link: the lookup stays inside the container's root.
    std::string_view rest = path_in_container.substr(1);
    for (;;) {
        const auto slash = rest.find('/');
        const std::string part(rest.substr(0, slash));
        if (part.empty() || part == "." || part == "..") {
            return std::nullopt;
        }
        const bool last = slash == std::string_view::npos;
        const int flags =
            last ? O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY : O_PATH | O_DIRECTORY | O_NOFOLLOW;
        unique_fd next(posix::open_retry(part, flags, 0, directory.get()));
        if (!next) {
            if (errno == ENOENT) {
                return installed_copy::absent;
            }
            if (errno == ELOOP || errno == ENOTDIR || errno == ENXIO) {
                return installed_copy::other; // a link, a file or a socket in the way
            }
            return std::nullopt;
        }
        directory = std::move(next);
        if (last) {
            break;
        }
        rest.remove_prefix(slash + 1);
    }
    struct stat copy {};
    struct stat genuine_info {};
    const unique_fd genuine(posix::open_retry(genuine_path, O_RDONLY));
    if (!genuine || ::fstat(genuine.get(), &genuine_info) != 0 || ::fstat(directory.get(), &copy) != 0) {
        return std::nullopt;
    }
    if (!S_ISREG(copy.st_mode) || (copy.st_mode & (S_IWGRP | S_IWOTH)) != 0 ||
        copy.st_size != genuine_info.st_size) {
        return installed_copy::other;
    }
    return same_content(directory.get(), genuine.get(), copy.st_size) ? installed_copy::genuine
                                                                      : installed_copy::other;
}

installed_copy compare_download(std::string_view archive, std::string_view genuine_sha256) {
    const auto entry = first_tar_entry(archive);
    return entry && entry->type == '0' && (entry->mode & 022U) == 0 &&
                   contracts::sha256_hex(entry->content) == genuine_sha256
               ? installed_copy::genuine
               : installed_copy::other;
}

} // namespace maka_eval::relay
