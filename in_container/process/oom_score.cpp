// The supervisor's and the subject's oom_score_adj (see oom_score.hpp).
#include "in_container/process/oom_score.hpp"

#include "in_container/base/io.hpp"

#include <cerrno>
#include <charconv>
#include <unistd.h>

namespace maka_eval::in_container {
namespace {

constexpr const char* oom_score_adj_path = "/proc/self/oom_score_adj";
constexpr int oom_score_adj_min = -1000;

} // namespace

bool set_oom_score_adj(int value) {
    char text[16];
    const auto [end, ec] = std::to_chars(text, text + sizeof text, value);
    if (ec != std::errc()) {
        return false;
    }
    const int fd = open_retry(oom_score_adj_path, O_WRONLY);
    if (fd < 0) {
        return false;
    }
    const bool written = write_all(fd, std::string_view(text, static_cast<std::size_t>(end - text)));
    ::close(fd);
    return written;
}

oom_protection protect_from_oom() {
    oom_protection out;
    const auto text = read_file(oom_score_adj_path, 32);
    int value = 0;
    if (text && std::from_chars(text->data(), text->data() + text->size(), value).ec == std::errc()) {
        out.inherited = value;
    }
    if (!out.inherited || *out.inherited == oom_score_adj_min) {
        return out;
    }
    if (set_oom_score_adj(oom_score_adj_min)) {
        out.lowered = true;
        return out;
    }
    // Without CAP_SYS_RESOURCE the kernel lets a process go down to the lowest value a privileged ancestor
    // set (oom_score_adj_min, which /proc does not show): found by bisection, a refused write changing
    // nothing, so ours is always `permitted`.
    // One step down first: refused (a container without the capability, nothing lowered before it, the
    // usual case), every lower value is refused too, and one write tells it instead of ten.
    if (*out.inherited - 1 < oom_score_adj_min || !set_oom_score_adj(*out.inherited - 1)) {
        return out;
    }
    int refused = oom_score_adj_min;
    int permitted = *out.inherited - 1;
    while (permitted - refused > 1) {
        const int middle = refused + (permitted - refused) / 2;
        (set_oom_score_adj(middle) ? permitted : refused) = middle;
    }
    out.lowered = permitted < *out.inherited;
    return out;
}

} // namespace maka_eval::in_container
