// Whole writes, bounded reads, close-on-exec opens (see io.hpp).
#include "posix/io.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

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
    // Read in place into one buffer, sized by fstat for a regular file (+1: its end is seen without growing)
    // and doubled otherwise. Appending 16 KiB chunks cost reading the 1 MiB helper for a cold install
    // 1.4 ms in reallocations and their page faults; in place it is one allocation and one copy.
    std::size_t size = 16384;
    struct stat info {};
    if (::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && info.st_size > 0) {
        size = static_cast<std::size_t>(info.st_size) + 1;
    }
    const std::size_t most = limit < SIZE_MAX ? limit + 1 : limit; // one byte past the limit says it is past
    std::string text(std::min(size, most), '\0');
    std::size_t have = 0;
    boost::system::error_code failed;
    while (!failed) {
        if (have == text.size()) {
            if (have > limit) {
                failed = make_error_code(boost::system::errc::file_too_large);
                break;
            }
            std::string larger(std::min(text.size() * 2, most), '\0');
            std::memcpy(larger.data(), text.data(), have);
            if (kind == contents::secret) {
                ::explicit_bzero(text.data(), text.size()); // the old buffer is freed below
            }
            text.swap(larger);
        }
        const ssize_t got = read_retry(fd, text.data() + have, text.size() - have);
        if (got < 0) {
            failed.assign(errno, boost::system::generic_category());
        } else if (got == 0) {
            break;
        } else {
            have += static_cast<std::size_t>(got);
        }
    }
    if (failed) {
        if (kind == contents::secret) {
            ::explicit_bzero(text.data(), text.size());
        }
        return failed;
    }
    text.resize(have);
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

boost::system::result<mapped_file> mapped_file::of(const std::string& path) {
    const unique_fd fd(open_retry(path, O_RDONLY));
    struct stat info {};
    if (!fd || ::fstat(fd.get(), &info) != 0) {
        return boost::system::error_code(errno, boost::system::generic_category());
    }
    if (info.st_size == 0) {
        return mapped_file(nullptr, 0);
    }
    const auto size = static_cast<std::size_t>(info.st_size);
    void* at = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd.get(), 0);
    if (at == MAP_FAILED) {
        return boost::system::error_code(errno, boost::system::generic_category());
    }
    return mapped_file(at, size);
}

mapped_file::mapped_file(mapped_file&& other) noexcept
    : at_(std::exchange(other.at_, nullptr)), size_(std::exchange(other.size_, 0)) {}

mapped_file& mapped_file::operator=(mapped_file&& other) noexcept {
    if (this != &other) {
        if (at_ != nullptr) {
            ::munmap(at_, size_);
        }
        at_ = std::exchange(other.at_, nullptr);
        size_ = std::exchange(other.size_, 0);
    }
    return *this;
}

mapped_file::~mapped_file() {
    if (at_ != nullptr) {
        ::munmap(at_, size_);
    }
}

std::string_view mapped_file::bytes() const noexcept {
    return {static_cast<const char*>(at_), size_};
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
