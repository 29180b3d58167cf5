// /proc status fields (see proc_status.hpp).
#include "contracts/proc_status.hpp"

#include "posix/io.hpp"

#include <charconv>
#include <string>

namespace maka_eval::contracts {

std::optional<std::uint64_t> status_kib(std::string_view status, std::string_view name) {
    while (!status.empty()) {
        const auto end = status.find('\n');
        std::string_view line = status.substr(0, end);
        status.remove_prefix(end == std::string_view::npos ? status.size() : end + 1);
        if (!line.starts_with(name) || line.size() <= name.size() || line[name.size()] != ':') {
            continue;
        }
        line.remove_prefix(name.size() + 1);
        while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) {
            line.remove_prefix(1);
        }
        std::uint64_t value = 0;
        const auto [ptr, ec] = std::from_chars(line.data(), line.data() + line.size(), value);
        if (ec == std::errc() && ptr != line.data()) {
            return value;
        }
        return std::nullopt;
    }
    return std::nullopt;
}

std::uint64_t peak_rss_kib() {
    const auto text = posix::read_file("/proc/self/status", std::size_t{1} << 16U);
    return text ? status_kib(*text, "VmHWM").value_or(0) : 0;
}

} // namespace maka_eval::contracts
