// EINTR-safe POSIX I/O helpers (see io.hpp).
#include "in_container/io.hpp"

#include <cerrno>
#include <fcntl.h>
#include <unistd.h>

namespace maka_eval::in_container {

bool write_all(int fd, std::string_view data) {
    while (!data.empty()) {
        const ssize_t written = ::write(fd, data.data(), data.size());
        if (written < 0) {
            if (errno == EINTR) {
                continue;
            }
            return false;
        }
        data.remove_prefix(static_cast<std::size_t>(written));
    }
    return true;
}

std::optional<std::string> read_all(int fd, std::size_t limit) {
    std::string out;
    char buffer[65536];
    while (true) {
        const ssize_t got = ::read(fd, buffer, sizeof buffer);
        if (got < 0) {
            if (errno == EINTR) {
                continue;
            }
            return std::nullopt;
        }
        if (got == 0) {
            return out;
        }
        if (out.size() + static_cast<std::size_t>(got) > limit) {
            return std::nullopt;
        }
        out.append(buffer, static_cast<std::size_t>(got));
    }
}

std::optional<std::string> read_file(const std::string& path, std::size_t limit) {
    int fd = -1;
    do {
        fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        return std::nullopt;
    }
    auto content = read_all(fd, limit);
    ::close(fd);
    return content;
}

void log_line(std::string_view message) {
    std::string line("maka-eval-helper: ");
    line.append(message).push_back('\n');
    (void)write_all(STDERR_FILENO, line);
}

} // namespace maka_eval::in_container
