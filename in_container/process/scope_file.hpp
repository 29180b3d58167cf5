// The scope file: where the supervisor records the subject's process group, for `cancel` and for people.
//
// Its first line is the pgid alone, as the original's file held it (`kill -TERM -- -$(head -1 FILE)` still
// works by hand). Then the leader's start time and the supervisor's pid and start time, so `cancel` signals
// the right supervisor and never a process that reused a pid. Written 0600 under umask 077; the subject
// never starts if it cannot be written (the original's exit 111 semantics).
#pragma once

#include "posix/io.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <sys/types.h>

#include <boost/system/result.hpp>

namespace maka_eval::in_container {

struct scope_record {
    pid_t pgid = 0;
    std::uint64_t leader_start = 0;
    pid_t supervisor = 0;
    std::uint64_t supervisor_start = 0;
};

[[nodiscard]] std::string format_scope(const scope_record& record);
[[nodiscard]] std::optional<scope_record> parse_scope(const std::string& text);
// Writes the record as a fresh file `name` (0600) in `directory` (a descriptor of a directory opened
// without following links): whatever is at the name (a stale record, a FIFO or a link someone planted) is
// removed, never opened, and a directory is moved aside. False (errno set) on any failure.
[[nodiscard]] bool publish_scope(int directory, const std::string& name, const scope_record& record);

// Where the record at `path` goes: its directory, opened once (made 0755 as /logs/artifacts is, when the
// image has no /logs) and never through a symbolic link, and the record's name in it; the record is made
// and removed relative to that descriptor. A directory reached through a link (a
// /logs/agent an earlier subject pointed elsewhere) is refused naming the link; for any other failure
// `directory` is -1 and the supervisor gives the original's answer (exit 111).
struct scope_place {
    posix::unique_fd directory;
    std::string name;
};
[[nodiscard]] boost::system::result<scope_place, std::string> open_scope_place(const std::string& path);

} // namespace maka_eval::in_container
