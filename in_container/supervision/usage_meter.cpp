// The subject's resource usage (see usage_meter.hpp).
#include "in_container/supervision/usage_meter.hpp"

#include "in_container/base/io.hpp"

#include <algorithm>
#include <charconv>

namespace maka_eval::in_container {
namespace {

// A number from a /proc/sys file; nullopt where /proc does not say.
std::optional<std::uint64_t> proc_sys_number(const char* path) {
    const auto text = read_file(path, 64);
    std::uint64_t value = 0;
    if (!text || std::from_chars(text->data(), text->data() + text->size(), value).ec != std::errc()) {
        return std::nullopt;
    }
    return value;
}

// The last process id allocated in our PID namespace.
std::optional<std::uint64_t> last_pid_allocated() {
    return proc_sys_number("/proc/sys/kernel/ns_last_pid");
}

std::uint64_t us_of(const timeval& t) {
    return static_cast<std::uint64_t>(t.tv_sec) * 1000000U + static_cast<std::uint64_t>(t.tv_usec);
}

} // namespace

void usage_meter::start() {
    last_pid_before_ = last_pid_allocated();
}

void usage_meter::add(const rusage& reaped) {
    user_us_ += us_of(reaped.ru_utime);
    system_us_ += us_of(reaped.ru_stime);
    peak_rss_kib_ = std::max(peak_rss_kib_, static_cast<std::uint64_t>(std::max(0L, reaped.ru_maxrss)));
}

contracts::subject_usage usage_meter::measure(std::uint64_t wall_ms, std::uint64_t own_processes) const {
    contracts::subject_usage out;
    out.wall_ms = wall_ms;
    out.user_ms = user_us_ / 1000U;
    out.system_ms = system_us_ / 1000U;
    out.peak_rss_kib = peak_rss_kib_;
    if (census_) {
        out.processes = seen_.size();
        out.processes_lower_bound = true;
        return out;
    }
    if (const auto last = last_pid_allocated(); last && last_pid_before_) {
        // Allocation wraps at pid_max.
        const std::uint64_t wrap = proc_sys_number("/proc/sys/kernel/pid_max").value_or(4194304);
        const std::uint64_t allocated =
            *last >= *last_pid_before_ ? *last - *last_pid_before_ : *last + wrap - *last_pid_before_;
        out.processes = allocated - std::min(allocated, own_processes);
    }
    return out;
}

} // namespace maka_eval::in_container
