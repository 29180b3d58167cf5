// A component-by-component walk to a root-owned file (see root_owned.hpp).
#include "in_container/process/root_owned.hpp"

#include "in_container/base/io.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace maka_eval::in_container {
namespace {

// Root's, and nobody else may change it: the only owner whose word a root helper takes.
bool trusted(const struct stat& info) {
    return info.st_uid == 0 && (info.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

} // namespace

boost::system::result<int, std::string> open_root_owned(const std::string& path, int flags) {
    if (!path.starts_with("/")) {
        return path + ": not an absolute path";
    }
    int directory = open_retry("/", O_PATH | O_DIRECTORY);
    if (directory < 0) {
        return std::string("/: ") + std::strerror(errno);
    }
    std::size_t begin = 1;
    std::string walked;
    while (true) {
        const auto end = path.find('/', begin);
        const std::string name =
            path.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
        walked += "/" + name;
        const bool last = end == std::string::npos || end + 1 == path.size();
        if (name.empty() || name == "." || name == "..") {
            ::close(directory);
            return path + ": not a plain path";
        }
        const int next = last ? open_retry(name, flags | O_NOFOLLOW | O_NONBLOCK, 0, directory)
                              : open_retry(name, O_PATH | O_DIRECTORY | O_NOFOLLOW, 0, directory);
        const int error = errno;
        ::close(directory);
        if (next < 0) {
            return walked + ": " +
                   (error == ELOOP || error == ENOTDIR ? std::string("a symbolic link or not a directory")
                                                       : std::string(std::strerror(error)));
        }
        struct stat info {};
        if (::fstat(next, &info) != 0 || !trusted(info) || (last && !S_ISREG(info.st_mode))) {
            ::close(next);
            return walked + ": not " + (last ? "a regular file" : "a directory") +
                   " of root's that only root may change (owner " + std::to_string(info.st_uid) + ", mode " +
                   std::to_string(info.st_mode & 07777) + ")";
        }
        if (last) {
            return next;
        }
        directory = next;
        begin = end + 1;
    }
}

} // namespace maka_eval::in_container
