// `maka-eval-helper install --from FILE --size N --directory DIR --name NAME [-- COMMAND...]`: the end of a
// cold install, done by the helper that was just written, then COMMAND (the relay's `session`).
//
// On a container's first trial the relay's session exec is a root shell that writes the helper from its
// stdin to FILE (`head -c N`), makes it executable and execs it with this command. Every step the shell
// used to take after that (the size check, the directory, the rename to the content-addressed NAME, the
// `maka-eval-helper` link) is a system call here instead of a process in the container: five fewer fork
// and execs, about 10 ms of a cold trial; COMMAND is then exec'd from the installed path. FILE must be the
// binary running (same inode as /proc/self/exe) and exactly N bytes long, so a truncated or mistaken file
// never takes the helper's place (and another file is never touched); the link is replaced by a rename, so
// it is never missing. Any failure exits 1 before COMMAND runs, so before any `hello` (removing FILE when it
// is ours): the relay then puts the helper in through the engine instead.
#include "in_container/base/io.hpp"
#include "in_container/commands/cli.hpp"
#include "in_container/commands/command_options.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace maka_eval::in_container {
namespace {

constexpr std::string_view install_usage =
    "usage: maka-eval-helper install --from FILE --size N --directory DIR --name NAME [-- COMMAND...]";
constexpr std::string_view link_name = "maka-eval-helper";

struct install_plan {
    std::string from;
    std::size_t size = 0;
    std::string directory;
    std::string name;
};

bool one_component(std::string_view name) {
    return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos;
}

// Whether `file` is the binary running (the kernel's /proc/self/exe, not a name).
bool is_running(int file) {
    struct stat info {};
    struct stat running {};
    return ::fstat(file, &info) == 0 && ::stat("/proc/self/exe", &running) == 0 && S_ISREG(info.st_mode) &&
           running.st_dev == info.st_dev && running.st_ino == info.st_ino;
}

// `file` (the binary running), when whole, made 0755 and renamed into `plan.directory` as `plan.name`, with
// the link beside it; or why not.
std::string put_in_place(const install_plan& plan, int file) {
    struct stat info {};
    if (::fstat(file, &info) != 0) {
        return plan.from + ": " + std::strerror(errno);
    }
    if (static_cast<std::size_t>(info.st_size) != plan.size) {
        return plan.from + " holds " + std::to_string(info.st_size) + " bytes, not " +
               std::to_string(plan.size) + " (incomplete)";
    }
    if (::fchmod(file, 0755) != 0) {
        return plan.from + ": " + std::strerror(errno);
    }
    std::string failed_at;
    const posix::unique_fd walked(open_directory_creating(plan.directory, 0755, &failed_at));
    // The directory itself searchable by anyone (a session without the capabilities to switch users runs
    // the helper as the subject's user), whatever mode it had.
    const posix::unique_fd directory(walked ? open_retry(".", O_RDONLY | O_DIRECTORY, 0, walked.get()) : -1);
    if (!directory || ::fchmod(directory.get(), 0755) != 0) {
        return (failed_at.empty() ? plan.directory : failed_at) + ": " + std::strerror(errno);
    }
    if (::renameat(AT_FDCWD, plan.from.c_str(), directory.get(), plan.name.c_str()) != 0) {
        return plan.from + " -> " + plan.directory + "/" + plan.name + ": " + std::strerror(errno);
    }
    const std::string link(link_name);
    const std::string staged = "." + link + ".incoming-" + unique_suffix();
    if (::symlinkat(plan.name.c_str(), directory.get(), staged.c_str()) != 0) {
        return plan.directory + "/" + staged + ": " + std::strerror(errno);
    }
    if (::renameat(directory.get(), staged.c_str(), directory.get(), link.c_str()) != 0) {
        const int error = errno;
        ::unlinkat(directory.get(), staged.c_str(), 0);
        return plan.directory + "/" + link + ": " + std::strerror(error);
    }
    return {};
}

} // namespace

int install_command(std::span<const std::string_view> args) {
    install_plan plan;
    std::int64_t size = 0;
    std::span<const std::string_view> command;
    command_options options("install", install_usage);
    options.text("--from", plan.from).number("--size", size, 1, std::int64_t{1} << 40);
    options.text("--directory", plan.directory).text("--name", plan.name);
    if (!options.parse(args, &command)) {
        return exit_usage;
    }
    if (plan.from.empty() || !options.given("--size") || !plan.directory.starts_with("/") ||
        !one_component(plan.name) || plan.name == link_name) {
        (void)options.usage_error(
            "--from, --size, an absolute --directory and a --name of one component (not " +
            std::string(link_name) + ") are required");
        return exit_usage;
    }
    plan.size = static_cast<std::size_t>(size);
    const posix::unique_fd file(open_retry(plan.from, O_RDONLY | O_NOFOLLOW));
    if (!file || !is_running(file.get())) {
        // Never removed: whatever it is, it is not ours.
        log_line("install: " + plan.from + " is not the binary running");
        return exit_failed;
    }
    if (const auto why = put_in_place(plan, file.get()); !why.empty()) {
        ::unlink(plan.from.c_str()); // ours, and not (all) in place: gone when still there
        log_line("install: " + why);
        return exit_failed;
    }
    if (command.empty()) {
        return exit_ok;
    }
    // COMMAND from the installed path, so that the session is what it is on every later trial (in `ps`, in
    // the tests that look for it). Should the exec fail, it runs here all the same.
    const std::string installed = plan.directory + "/" + plan.name;
    std::vector<std::string> owned{installed};
    owned.insert(owned.end(), command.begin(), command.end());
    std::vector<char*> argv;
    argv.reserve(owned.size() + 1);
    for (auto& arg : owned) {
        argv.push_back(arg.data());
    }
    argv.push_back(nullptr);
    ::execv(installed.c_str(), argv.data());
    log_line("install: " + installed + ": " + std::strerror(errno) + " (running on from " + plan.from + ")");
    return run_cli(command);
}

} // namespace maka_eval::in_container
