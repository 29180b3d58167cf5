// The helper's I/O: the shared whole writes, bounded reads and close-on-exec opens (posix/io.hpp), and what
// only a root helper needs — directories walked without following links, entries moved aside, the log line.
#pragma once

#include "posix/io.hpp"

#include <cstddef>
#include <fcntl.h>
#include <optional>
#include <string>
#include <string_view>

namespace maka_eval::in_container {

// The shared POSIX I/O (posix/io.hpp), the helper's vocabulary everywhere.
using posix::open_retry;
using posix::read_all;
using posix::read_file;
using posix::write_all;

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
