// The subject's resource usage (see usage_meter.hpp).
#include "in_container/usage_meter.hpp"

#include "in_container/io.hpp"

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

std::uint64_t ms_of(const timeval& t) {
    return static_cast<std::uint64_t>(t.tv_sec) * 1000U + static_cast<std::uint64_t>(t.tv_usec) / 1000U;
}

} // namespace

void usage_meter::start() {
    (void)::getrusage(RUSAGE_CHILDREN, &children_before_);
    last_pid_before_ = last_pid_allocated();
}

contracts::subject_usage usage_meter::measure(std::uint64_t wall_ms, bool forked_drainer) const {
    contracts::subject_usage out;
    out.wall_ms = wall_ms;
    rusage now{};
    if (::getrusage(RUSAGE_CHILDREN, &now) == 0) {
        out.user_ms = ms_of(now.ru_utime) - std::min(ms_of(now.ru_utime), ms_of(children_before_.ru_utime));
        out.system_ms = ms_of(now.ru_stime) - std::min(ms_of(now.ru_stime), ms_of(children_before_.ru_stime));
        out.peak_rss_kib = static_cast<std::uint64_t>(std::max(0L, now.ru_maxrss));
    }
    if (const auto last = last_pid_allocated(); last && last_pid_before_) {
        // Allocation wraps at pid_max.
        const std::uint64_t wrap = proc_sys_number("/proc/sys/kernel/pid_max").value_or(4194304);
        std::uint64_t allocated =
            *last >= *last_pid_before_ ? *last - *last_pid_before_ : *last + wrap - *last_pid_before_;
        if (forked_drainer && allocated > 0) {
            --allocated;
        }
        out.processes = allocated;
    }
    return out;
}

} // namespace maka_eval::in_container
