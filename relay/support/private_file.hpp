// Files that hold a secret the relay is given by path (the relay token's --token-file, a signing key's
// --sign-key) and whole files hashed by path (an artifact to verify, the relay's own binary).
//
// A private file is opened without following a link or blocking on a FIFO, and accepted only when it is a
// regular file owned by this process's user that neither group nor others may read or write; it is read
// whole, at most `limit` bytes, through buffers that are wiped. What is wrong comes back by cause, with what
// was found, so that each caller says it in its own words.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <sys/stat.h>

#include <boost/system/error_code.hpp>
#include <boost/system/result.hpp>

namespace maka_eval::relay {

enum class private_file_fault {
    unopenable,  // open or fstat failed (`error` says why)
    not_regular, // a directory, a FIFO, a device
    not_ours,    // owned by another user (`info.st_uid`)
    shared,      // group or others may read or write it (`info.st_mode`)
    unreadable,  // the read failed, or the file is longer than the limit (errc::file_too_large)
};

struct private_file_error {
    private_file_fault fault = private_file_fault::unopenable;
    boost::system::error_code error; // unopenable, unreadable
    struct stat info {};             // not_ours, shared
};

[[nodiscard]] boost::system::result<std::string, private_file_error>
read_private_file(const std::string& path, std::size_t limit);

// The lowercase hex SHA-256 of the file at `path`, read in 1 MiB pieces; `flags` are added to O_RDONLY
// (O_NOFOLLOW for a file named by someone else). nullopt when it cannot be opened or read.
[[nodiscard]] std::optional<std::string> file_sha256(const std::string& path, int flags = 0);

} // namespace maka_eval::relay
