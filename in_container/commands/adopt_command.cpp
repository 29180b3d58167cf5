// `maka-eval-helper adopt --request FILE --uid U --gid G`: hand a root-uploaded request file to the subject's
// user.
//
// Trial runners upload files as root (`docker cp` creates them root:root, keeping the 0600 mode), so a
// subject user other than root could not read its own `run` request. The relay runs this as root, once,
// between the upload and `run`. It refuses anything but a regular file that root owns and only root can
// read, opened without following a symlink, and changes it through the open descriptor, so a path swapped
// in the meantime can never redirect the change to another file.
#include "in_container/base/io.hpp"
#include "in_container/commands/cli.hpp"
#include "in_container/commands/command_options.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>

namespace maka_eval::in_container {
int adopt_command(std::span<const std::string_view> args) {
    std::string path;
    std::int64_t uid = 0;
    std::int64_t gid = 0;
    command_options options("adopt", "usage: maka-eval-helper adopt --request FILE --uid U --gid G");
    // (uid_t)-1 is "no change" to fchown: never an id to give the file to.
    options.text("--request", path).number("--uid", uid, 0, 0xFFFFFFFE).number("--gid", gid, 0, 0xFFFFFFFE);
    if (!options.parse(args) || ((path.empty() || !options.given("--uid") || !options.given("--gid")) &&
                                 !options.usage_error("--request, --uid and --gid are required"))) {
        return exit_usage;
    }
    const int fd = open_retry(path, O_RDONLY | O_NOFOLLOW);
    if (fd < 0) {
        log_line("adopt: " + path + ": " + std::strerror(errno));
        return exit_failed;
    }
    struct stat info {};
    const bool acceptable =
        ::fstat(fd, &info) == 0 && S_ISREG(info.st_mode) && info.st_uid == 0 && (info.st_mode & 077) == 0;
    const bool changed = acceptable && ::fchown(fd, static_cast<uid_t>(uid), static_cast<gid_t>(gid)) == 0 &&
                         ::fchmod(fd, 0600) == 0;
    const int saved = errno;
    ::close(fd);
    if (!acceptable) {
        log_line("adopt: " + path + " must be a regular file owned by root and readable by root only");
        return exit_failed;
    }
    if (!changed) {
        log_line("adopt: " + path + ": " + std::strerror(saved));
        return exit_failed;
    }
    return exit_ok;
}

} // namespace maka_eval::in_container
