// What the two sides of a subject's start share: the supervisor's (spawn.cpp) and the launcher's
// (launcher.cpp). The status protocol, the last steps that make a process the subject, the launcher's
// arguments, and what a launcher on standby is handed.
#pragma once

#include "in_container/process/spawn.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <vector>

namespace maka_eval::in_container {

// Launcher or child → parent: one tag byte and a number (the subject's pid after 'P', else the errno).
bool send_status(int status_fd, char tag, int value);
[[noreturn]] void report_and_exit(int status_fd, char tag, int error, int exit_code);

// In the process that is to be the subject: its own session, its stdin (`null_fd`, or the terminal),
// stdout and stderr, umask 077, the scope published, the OOM score, the subject's identity and working
// directory, then exec along `candidates`. Reports on `status_fd` what failed, and exits.
[[noreturn]] void become_subject(const spawn_plan& plan, int status_fd, int null_fd,
                                 const std::vector<char*>& argv, const std::vector<char*>& envp,
                                 const std::vector<std::string>& candidates,
                                 const std::vector<gid_t>& groups);

// The PATH of a null-terminated environment ("NAME=VALUE" entries), where the subject's command is looked
// up; nullptr when it has none.
[[nodiscard]] const char* path_in(const std::vector<char*>& envp);

// `maka-eval-helper launch-subject STATUS_FD SCOPE_DIR_FD …`, as the launcher parses it.
[[nodiscard]] std::vector<std::string> launcher_arguments(const spawn_plan& plan, int status_fd,
                                                          const std::vector<gid_t>& groups);

// What a standby launcher is handed: the subject's stdin, stdout and stderr, the status pipe and the scope
// directory, in this order, as SCM_RIGHTS beside an 8-byte length; then that many bytes: the launcher's
// arguments after its two descriptor numbers (as launcher_arguments makes them) and the subject's
// environment, each NUL-terminated, the first string their count.
inline constexpr std::size_t handed_fds = 5;
inline constexpr std::uint64_t handed_limit = std::uint64_t{64} * 1024 * 1024; // a `run` line: 4 MiB at most

// That first message, for sendmsg and recvmsg alike: the length, and room for the descriptors.
struct handover_header {
    std::uint64_t size = 0;
    iovec part{&size, sizeof size};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * handed_fds)] = {};
    msghdr message{.msg_name = nullptr,
                   .msg_namelen = 0,
                   .msg_iov = &part,
                   .msg_iovlen = 1,
                   .msg_control = control,
                   .msg_controllen = sizeof control,
                   .msg_flags = 0};

    handover_header() = default;
    handover_header(const handover_header&) = delete; // it points into itself
    handover_header& operator=(const handover_header&) = delete;
};

} // namespace maka_eval::in_container
