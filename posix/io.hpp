// The POSIX I/O both binaries use: whole writes, bounded whole reads, opens that are always close-on-exec
// and retried on EINTR. One implementation, so that the relay (on the host) and the helper (static, in the
// container, often as root) cannot drift apart in how a short write, a zero-byte write, an interrupted call
// or an oversized input is treated.
//
// Pure POSIX and the C++ library: the helper links it statically into every image.
#pragma once

#include <cstddef>
#include <fcntl.h>
#include <string>
#include <string_view>
#include <sys/types.h>

#include <boost/system/result.hpp>

namespace maka_eval::posix {

// Writes all of `data`, retrying EINTR and short writes; false (errno set) on any other error, and on a
// write that takes nothing (EIO: it would loop for ever).
bool write_all(int fd, std::string_view data);

// read(2) retried on EINTR.
ssize_t read_retry(int fd, void* buffer, std::size_t size);

// What a bounded read is for: a secret's buffers are wiped (explicit_bzero), the scratch buffer always and
// the text too when the read fails.
enum class contents { plain, secret };

// Reads `fd` to EOF, at most `limit` bytes. Errors: errno's, or errc::file_too_large past `limit`.
[[nodiscard]] boost::system::result<std::string> read_all(int fd, std::size_t limit,
                                                          contents kind = contents::plain);

// openat(2) retried on EINTR; O_CLOEXEC is always added. -1 with errno on failure. `directory`: a descriptor
// for a relative `path` (AT_FDCWD: the working directory).
int open_retry(const std::string& path, int flags, unsigned mode = 0, int directory = AT_FDCWD);

// A whole file, opened O_RDONLY plus `flags` (e.g. O_NOFOLLOW) through open_retry, at most `limit` bytes.
[[nodiscard]] boost::system::result<std::string> read_file(const std::string& path, std::size_t limit,
                                                           int flags = 0, contents kind = contents::plain);

// A descriptor closed when it goes out of scope.
class unique_fd {
  public:
    unique_fd() = default;
    explicit unique_fd(int fd) : fd_(fd) {}
    unique_fd(unique_fd&& other) noexcept : fd_(other.release()) {}
    unique_fd& operator=(unique_fd&& other) noexcept;
    unique_fd(const unique_fd&) = delete;
    unique_fd& operator=(const unique_fd&) = delete;
    ~unique_fd();
    [[nodiscard]] int get() const { return fd_; }
    [[nodiscard]] explicit operator bool() const { return fd_ >= 0; }
    int release();

  private:
    int fd_ = -1;
};

// A file's whole contents mapped read-only, its pages mapped in one call (MAP_POPULATE): 1 MiB read into
// fresh memory costs its 256 page faults, several times the copy itself. Only for a file that nothing
// truncates while it is mapped (that would be a SIGBUS): this build's own helper, an executable a process
// runs (the kernel refuses to write or truncate it, ETXTBSY).
class mapped_file {
  public:
    // The file at `path` (opened for the mapping only); errno's on failure; an empty file maps nothing and
    // is an empty view.
    [[nodiscard]] static boost::system::result<mapped_file> of(const std::string& path);
    mapped_file(mapped_file&& other) noexcept;
    mapped_file& operator=(mapped_file&& other) noexcept;
    mapped_file(const mapped_file&) = delete;
    mapped_file& operator=(const mapped_file&) = delete;
    ~mapped_file();
    [[nodiscard]] std::string_view bytes() const noexcept;

  private:
    mapped_file(void* at, std::size_t size) : at_(at), size_(size) {}
    void* at_ = nullptr;
    std::size_t size_ = 0;
};

// A close-on-exec pipe whose ends close themselves; errno set and both ends empty on failure.
struct pipe_ends {
    unique_fd read;
    unique_fd write;
    [[nodiscard]] explicit operator bool() const { return static_cast<bool>(read); }
};
[[nodiscard]] pipe_ends make_pipe();

} // namespace maka_eval::posix
