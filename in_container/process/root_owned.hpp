// Opening a file only root could have put there: what a root helper reads and rewrites on a subject's
// behalf (the egress proxy's published address, /etc/hosts) must not be a link, a FIFO, or something a
// subject could have planted or swapped.
//
// The path is walked from / one component at a time with O_NOFOLLOW, each directory checked as it is
// opened (root's, writable by nobody else), so no symlink anywhere in it is followed and no directory on
// the way could have had an entry swapped by someone else; the file itself must be a regular file of root's,
// writable by nobody else, and is opened O_NONBLOCK (a FIFO would not block us, it is refused).
#pragma once

#include <string>

#include <boost/system/result.hpp>

namespace maka_eval::in_container {

// A descriptor for `path` opened with `flags` (O_CLOEXEC, O_NOFOLLOW and O_NONBLOCK added), or why not
// (naming the component at fault).
[[nodiscard]] boost::system::result<int, std::string> open_root_owned(const std::string& path, int flags);

} // namespace maka_eval::in_container
