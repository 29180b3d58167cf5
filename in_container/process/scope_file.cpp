// Scope file format and publication (see scope_file.hpp).
#include "in_container/process/scope_file.hpp"

#include "in_container/base/io.hpp"
#include "in_container/base/text_fields.hpp"

#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace maka_eval::in_container {

std::string format_scope(const scope_record& record) {
    return std::to_string(record.pgid) + "\nleader-start " + std::to_string(record.leader_start) +
           "\nsupervisor " + std::to_string(record.supervisor) + " " +
           std::to_string(record.supervisor_start) + "\n";
}

std::optional<scope_record> parse_scope(const std::string& text) {
    std::string_view rest = text;
    scope_record record;
    if (!next_number(rest, record.pgid) || next_field(rest) != "leader-start" ||
        !next_number(rest, record.leader_start) || next_field(rest) != "supervisor" ||
        !next_number(rest, record.supervisor) || !next_number(rest, record.supervisor_start) ||
        record.pgid <= 0 || record.supervisor <= 0) {
        return std::nullopt;
    }
    return record;
}

bool publish_scope(int directory, const std::string& name, const scope_record& record) {
    // A fresh file: nothing at the name can make the spawn wait (a FIFO) or be written through (a link).
    if (::unlinkat(directory, name.c_str(), 0) != 0 && errno != ENOENT &&
        ((errno != EISDIR && errno != EPERM) || !move_aside(directory, name))) {
        return false;
    }
    const int fd = open_retry(name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK, 0600, directory);
    if (fd < 0) {
        return false;
    }
    const bool ok = write_all(fd, format_scope(record)) && ::fchmod(fd, 0600) == 0;
    return ::close(fd) == 0 && ok;
}

boost::system::result<scope_place, std::string> open_scope_place(const std::string& path) {
    const auto slash = path.rfind('/');
    const std::string directory = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    scope_place place;
    place.name = slash == std::string::npos ? path : path.substr(slash + 1);
    std::string failed_at;
    place.directory = posix::unique_fd(open_directory_creating(directory, 0755, &failed_at));
    if (!place.directory && errno == ELOOP) {
        return "the scope record's directory " + directory + " is reached through a symbolic link (" +
               failed_at + "): nothing is written there";
    }
    return place;
}

} // namespace maka_eval::in_container
