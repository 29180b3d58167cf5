// run -t: the relay's own terminal in raw mode while the subject has it, and as it was on every way out.
//
// Raw, as `docker exec -it` sets it: every keystroke goes to the subject as typed (Ctrl-C is the subject's
// interrupt, made by its own terminal in the container; Ctrl-Z, Ctrl-\ likewise), nothing is echoed or
// translated here. Restored by the destructor on the normal path (the trial's SIGTERM, SIGINT and SIGHUP
// are its own events, so they end there too), by an atexit handler for an exit() that skips destructors,
// and by handlers for the signals of a crash (SEGV, BUS, ABRT, FPE, ILL), which restore it with tcsetattr
// (async-signal-safe) and die of the same signal. Only SIGKILL leaves it raw: `stty sane` mends that.
#pragma once

#include <optional>
#include <termios.h>

namespace maka_eval::relay {

class raw_terminal {
  public:
    // `fd` in raw mode; nullopt (nothing changed) when it is not a terminal or refuses.
    [[nodiscard]] static std::optional<raw_terminal> enter(int fd);
    raw_terminal(raw_terminal&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
    raw_terminal(const raw_terminal&) = delete;
    raw_terminal& operator=(const raw_terminal&) = delete;
    raw_terminal& operator=(raw_terminal&&) = delete;
    ~raw_terminal();

  private:
    explicit raw_terminal(int fd) : fd_(fd) {}
    int fd_ = -1;
};

} // namespace maka_eval::relay
