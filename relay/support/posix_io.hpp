// EINTR-safe whole reads and writes for the relay's few blocking descriptors: a secret read to EOF (the task
// environment's pipe, a TLS key), a run request written to its file, live output to a regular file.
//
// The helper has the same kind of functions in in_container/io.hpp; the relay does not link the helper's
// library, whose other parts (supervisor, probes) have no place on the host.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <boost/system/result.hpp>

namespace maka_eval::relay {

// Writes all of `data`, retrying EINTR and short writes; false (errno set by the write) on any other error or
// a write that takes nothing.
bool write_all(int fd, std::string_view data);

// Reads `fd` to EOF, at most `limit` bytes. The bytes may be a secret: the read buffer is wiped, and on
// failure so is whatever was read. Errors: errno's, or errc::file_too_large past `limit`.
[[nodiscard]] boost::system::result<std::string> read_secret(int fd, std::size_t limit);

} // namespace maka_eval::relay
