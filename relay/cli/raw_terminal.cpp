// The relay's terminal in raw mode for run -t, restored on every way out (raw_terminal.hpp).
#include "relay/cli/raw_terminal.hpp"

#include <array>
#include <csignal>
#include <cstdlib>
#include <unistd.h>

namespace maka_eval::relay {
namespace {

// What the crash handlers and atexit restore: one terminal per process, set before they can run.
volatile sig_atomic_t saved_fd = -1;
termios saved_mode{};

void restore_saved() {
    if (saved_fd >= 0) {
        (void)::tcsetattr(saved_fd, TCSADRAIN, &saved_mode);
        saved_fd = -1;
    }
}

constexpr std::array<int, 5> crash_signals = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL};

extern "C" void restore_and_die(int sig) {
    restore_saved();
    (void)::signal(sig, SIG_DFL);
    (void)::raise(sig);
}

extern "C" void restore_at_exit() {
    restore_saved();
}

} // namespace

std::optional<raw_terminal> raw_terminal::enter(int fd) {
    termios mode{};
    if (::isatty(fd) != 1 || ::tcgetattr(fd, &mode) != 0) {
        return std::nullopt;
    }
    saved_mode = mode;
    saved_fd = fd;
    static const bool registered = [] {
        (void)std::atexit(restore_at_exit);
        for (const int sig : crash_signals) {
            struct sigaction action {};
            action.sa_handler = restore_and_die;
            (void)::sigaction(sig, &action, nullptr);
        }
        return true;
    }();
    (void)registered;
    ::cfmakeraw(&mode);
    if (::tcsetattr(fd, TCSADRAIN, &mode) != 0) {
        saved_fd = -1;
        return std::nullopt;
    }
    return raw_terminal(fd);
}

raw_terminal::~raw_terminal() {
    if (fd_ >= 0) {
        restore_saved();
    }
}

} // namespace maka_eval::relay
