// Small, EINTR-safe POSIX I/O used across the helper: whole writes, whole reads, close-on-exec opens.
#pragma once

#include <cstddef>
#include <fcntl.h>
#include <optional>
#include <string>
#include <string_view>

namespace maka_eval::in_container {

// Writes all of `data` (retrying EINTR and short writes); false on any other error.
bool write_all(int fd, std::string_view data);
// Reads until EOF, at most `limit` bytes (nullopt on error or when the input is longer).
std::optional<std::string> read_all(int fd, std::size_t limit);
// Reads a whole file (O_CLOEXEC, O_NOFOLLOW not implied), at most `limit` bytes.
std::optional<std::string> read_file(const std::string& path, std::size_t limit);
// openat(2) retried on EINTR; O_CLOEXEC is always added. -1 with errno on failure. `directory`: a descriptor
// for a relative `path` (AT_FDCWD: the working directory).
int open_retry(const std::string& path, int flags, unsigned mode = 0, int directory = AT_FDCWD);
// The directory at `path` as it exists when it is a real directory (whoever owns it), its missing components
// created with `mode` (the original created /logs/artifacts 0700); never through a symbolic link, at any
// component. An O_PATH descriptor, or -1 with errno (ELOOP when the component at fault is a symbolic link)
// and, in `failed_at`, the path up to that component.
int open_directory_creating(const std::string& path, unsigned mode, std::string* failed_at = nullptr);
// A name nobody else picks (our pid and the time), for entries only root writes beside.
[[nodiscard]] std::string unique_suffix();
// Renames the entry `name` in `directory` to NAME.in-the-way-SUFFIX (a directory someone planted where a
// file of ours goes: kept, for whoever wants to look, never followed or deleted). The new name, or nullopt
// with errno.
[[nodiscard]] std::optional<std::string> move_aside(int directory, const std::string& name);
// Closes every descriptor above stderr (close_range, or one by one where the kernel lacks it).
void close_inherited_descriptors();
// A message on stderr, one line, prefixed with the program name.
void log_line(std::string_view message);

} // namespace maka_eval::in_container
