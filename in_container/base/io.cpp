// EINTR-safe POSIX I/O helpers (see io.hpp).
#include "in_container/base/io.hpp"

#include "contracts/limits.hpp"
#include "contracts/utf8.hpp"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace maka_eval::in_container {

std::string unique_suffix() {
    return std::to_string(::getpid()) + "-" +
           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

std::optional<std::string> move_aside(int directory, const std::string& name) {
    std::string aside = name + ".in-the-way-" + unique_suffix();
    if (::renameat(directory, name.c_str(), directory, aside.c_str()) != 0) {
        return std::nullopt;
    }
    return aside;
}

int open_directory_creating(const std::string& path, unsigned mode, std::string* failed_at) {
    // One component at a time from / (or the working directory), each opened without following a link:
    // a symlink anywhere on the way (a /logs a subject pointed elsewhere) is refused, never followed.
    int directory = open_retry(path.starts_with("/") ? "/" : ".", O_PATH | O_DIRECTORY);
    std::size_t begin = 0;
    const auto fail = [&](std::size_t end, int error) {
        if (failed_at != nullptr) {
            *failed_at = path.substr(0, end);
        }
        ::close(directory);
        errno = error;
        return -1;
    };
    while (directory >= 0 && begin < path.size()) {
        const auto end = path.find('/', begin);
        const std::string name =
            path.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
        begin = end == std::string::npos ? path.size() : end + 1;
        if (name.empty() || name == ".") {
            continue;
        }
        if (::mkdirat(directory, name.c_str(), static_cast<mode_t>(mode)) != 0 && errno != EEXIST) {
            return fail(end, errno);
        }
        const int next = open_retry(name, O_PATH | O_DIRECTORY | O_NOFOLLOW, 0, directory);
        if (next < 0) {
            // Said as what it is: a link (whatever it points at) or something that is not a directory.
            struct stat info {};
            const bool link =
                ::fstatat(directory, name.c_str(), &info, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(info.st_mode);
            return fail(end, link ? ELOOP : errno);
        }
        ::close(directory);
        directory = next;
    }
    return directory;
}

void close_inherited_descriptors() {
    if (::close_range(3, ~0U, 0) == 0) {
        return;
    }
    const long most = ::sysconf(_SC_OPEN_MAX);
    for (long fd = 3; fd < (most > 0 ? most : 1024); ++fd) {
        (void)::close(static_cast<int>(fd));
    }
}

void log_line(std::string_view message) {
    // Short whatever it quotes: under Harbor this stream is read line by line with a 64 KiB limit.
    std::string line("maka-eval-helper: ");
    line.append(contracts::shorten_text(message, contracts::message_text_limit_bytes)).push_back('\n');
    (void)write_all(STDERR_FILENO, line);
}

} // namespace maka_eval::in_container
