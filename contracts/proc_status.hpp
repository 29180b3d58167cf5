// Reading a field of /proc/<pid>/status text (e.g. VmHWM, the peak resident set of this address space).
//
// The peak memory both binaries report comes from VmHWM, not getrusage's ru_maxrss: ru_maxrss survives
// execve, so it reports whatever ran before the exec (runc init for the helper, the caller for the relay).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace maka_eval::contracts {

// The value of "NAME:   1234 kB" in `status`, in KiB.
[[nodiscard]] std::optional<std::uint64_t> status_kib(std::string_view status, std::string_view name);

// This process's VmHWM from /proc/self/status; 0 when unreadable.
[[nodiscard]] std::uint64_t peak_rss_kib();

} // namespace maka_eval::contracts
