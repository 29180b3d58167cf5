// Whole writes, bounded reads, close-on-exec opens (see io.hpp).
#include "posix/io.hpp"

#include <cerrno>
#include <cstring>
#include <unistd.h>

namespace maka_eval::posix {

bool write_all(int fd, std::string_view data) {
    while (!data.empty()) {
        const ssize_t wrote = ::write(fd, data.data(), data.size());
        if (wrote < 0 && errno == EINTR) {
            continue;
        }
        if (wrote <= 0) {
            if (wrote == 0) {
                errno = EIO;
            }
            return false;
        }
        data.remove_prefix(static_cast<std::size_t>(wrote));
    }
    return true;
}

ssize_t read_retry(int fd, void* buffer, std::size_t size) {
    ssize_t got = 0;
    do {
        got = ::read(fd, buffer, size);
    } while (got < 0 && errno == EINTR);
    return got;
}

boost::system::result<std::string> read_all(int fd, std::size_t limit, contents kind) {
    std::string text;
    char chunk[16384];
    boost::system::error_code failed;
    while (true) {
        const ssize_t got = read_retry(fd, chunk, sizeof chunk);
        if (got < 0) {
            failed.assign(errno, boost::system::generic_category());
            break;
        }
        if (got == 0) {
            break;
        }
        if (text.size() + static_cast<std::size_t>(got) > limit) {
            failed = make_error_code(boost::system::errc::file_too_large);
            break;
        }
        text.append(chunk, static_cast<std::size_t>(got));
    }
    if (kind == contents::secret) {
        ::explicit_bzero(chunk, sizeof chunk);
        if (failed) {
            ::explicit_bzero(text.data(), text.size());
        }
    }
    if (failed) {
        return failed;
    }
    return text;
}

int open_retry(const std::string& path, int flags, unsigned mode, int directory) {
    int fd = -1;
    do {
        fd = ::openat(directory, path.c_str(), flags | O_CLOEXEC, static_cast<mode_t>(mode));
    } while (fd < 0 && errno == EINTR);
    return fd;
}

boost::system::result<std::string> read_file(const std::string& path, std::size_t limit, int flags,
                                             contents kind) {
    const unique_fd fd(open_retry(path, O_RDONLY | flags));
    if (!fd) {
        return boost::system::error_code(errno, boost::system::generic_category());
    }
    return read_all(fd.get(), limit, kind);
}

unique_fd& unique_fd::operator=(unique_fd&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) {
            ::close(fd_);
        }
        fd_ = other.release();
    }
    return *this;
}

unique_fd::~unique_fd() {
    if (fd_ >= 0) {
        ::close(fd_);
    }
}

pipe_ends make_pipe() {
    int ends[2] = {-1, -1};
    if (::pipe2(ends, O_CLOEXEC) != 0) {
        return {};
    }
    return {unique_fd(ends[0]), unique_fd(ends[1])};
}

int unique_fd::release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
}

} // namespace maka_eval::posix
