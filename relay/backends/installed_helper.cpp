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

} // namespace

host_comparison::host_comparison(long pid, std::string_view container_id, std::string_view path_in_container,
                                 const std::string& genuine_path) {
    look_up(pid, container_id, path_in_container, genuine_path);
}

void host_comparison::look_up(long pid, std::string_view container_id, std::string_view path_in_container,
                              const std::string& genuine_path) {
    if (pid <= 0 || container_id.size() < 12 || !path_in_container.starts_with('/')) {
        return;
    }
    // One descriptor for the process: its cgroup and its root are then that process's, even if the pid
    // were reused meanwhile (the opens below fail once it is gone).
    const unique_fd process(posix::open_retry("/proc/" + std::to_string(pid), O_PATH | O_DIRECTORY));
    if (!process) {
        return;
    }
    const unique_fd cgroup(posix::open_retry("cgroup", O_RDONLY, 0, process.get()));
    if (!cgroup) {
        return;
    }
    const auto groups = posix::read_all(cgroup.get(), 1U << 16U);
    if (!groups || groups->find(container_id) == std::string::npos) {
        return; // not that container's process: another pid namespace than the engine's
    }
    unique_fd directory(posix::open_retry("root", O_PATH | O_DIRECTORY, 0, process.get()));
    if (!directory) {
        return; // no privilege to look into the container
    }
    // Component by component, never through a link: the lookup stays inside the container's root.
    std::string_view rest = path_in_container.substr(1);
    for (;;) {
        const auto slash = rest.find('/');
        const std::string part(rest.substr(0, slash));
        if (part.empty() || part == "." || part == "..") {
            return;
        }
        const bool last = slash == std::string_view::npos;
        const int flags =
            last ? O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY : O_PATH | O_DIRECTORY | O_NOFOLLOW;
        unique_fd next(posix::open_retry(part, flags, 0, directory.get()));
        if (!next) {
            if (errno == ENOENT) {
                verdict_ = installed_copy::absent;
            } else if (errno == ELOOP || errno == ENOTDIR || errno == ENXIO) {
                verdict_ = installed_copy::other; // a link, a file or a socket in the way
            }
            return;
        }
        directory = std::move(next);
        if (last) {
            break;
        }
        rest.remove_prefix(slash + 1);
    }
    struct stat copy {};
    struct stat genuine_info {};
    unique_fd genuine(posix::open_retry(genuine_path, O_RDONLY));
    if (!genuine || ::fstat(genuine.get(), &genuine_info) != 0 || ::fstat(directory.get(), &copy) != 0) {
        return;
    }
    if (!S_ISREG(copy.st_mode) || (copy.st_mode & (S_IWGRP | S_IWOTH)) != 0 ||
        copy.st_size != genuine_info.st_size) {
        verdict_ = installed_copy::other;
        return;
    }
    copy_ = std::move(directory);
    genuine_ = std::move(genuine);
    size_ = copy.st_size;
    comparing_ = true;
}

namespace {

constexpr off_t chunk_size = 65536;

// Whether the chunk of `size` total bytes at `at` (at most chunk_size) is the same in both files; the bytes
// compared.
std::optional<std::size_t> same_chunk(int copy, int genuine, off_t size, off_t at) {
    std::array<char, chunk_size> x{};
    std::array<char, chunk_size> y{};
    const auto want = static_cast<std::size_t>(std::min(size - at, chunk_size));
    const auto from_copy = read_at(copy, x.data(), want, at);
    const auto from_genuine = read_at(genuine, y.data(), want, at);
    if (from_copy != static_cast<ssize_t>(want) || from_genuine != static_cast<ssize_t>(want) ||
        std::char_traits<char>::compare(x.data(), y.data(), want) != 0) {
        return std::nullopt;
    }
    return want;
}

} // namespace

bool host_comparison::step() {
    if (!comparing_) {
        return false;
    }
    // Same size, same bytes: a chunk of each at the same offset.
    const auto compared = same_chunk(copy_.get(), genuine_.get(), size_, at_);
    if (!compared) {
        verdict_ = installed_copy::other;
        comparing_ = false;
        return false;
    }
    at_ += static_cast<off_t>(*compared);
    if (at_ >= size_) {
        verdict_ = installed_copy::genuine;
        comparing_ = false;
        return false;
    }
    return true;
}

std::optional<installed_copy> compare_on_this_host(long pid, std::string_view container_id,
                                                   std::string_view path_in_container,
                                                   const std::string& genuine_path) {
    host_comparison comparison(pid, container_id, path_in_container, genuine_path);
    while (comparison.step()) {
    }
    return comparison.verdict();
}

installed_copy compare_download(std::string_view archive, std::string_view genuine_sha256) {
    const auto entry = first_tar_entry(archive);
    return entry && entry->type == '0' && (entry->mode & 022U) == 0 &&
                   contracts::sha256_hex(entry->content) == genuine_sha256
               ? installed_copy::genuine
               : installed_copy::other;
}

} // namespace maka_eval::relay
