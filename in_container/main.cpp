// maka-eval-helper entry point: arguments to views, exceptions to a message and exit code 1.
//
// Before anything is read, the process is made non-dumpable (no core file, no ptrace and no /proc/<pid>/fd,
// mem or environ for anyone but root: a subject of the same uid cannot read the `run` line off our stdin)
// and every inherited descriptor above stderr is closed (whatever started us may have leaked sockets or
// pipes; a subject must never inherit, say, the relay's connection to the orchestrator).
//
// malloc keeps what is freed (no mmap per large block, no trim at the top): a `run` request of megabytes
// (credentials) goes through the line buffer, the parsed JSON and the request, and each reuses the pages
// the one before faulted in instead of faulting fresh ones (a page fault is the costly part of moving
// bytes here, more so in a VM). The supervisor returns it all once the subject has started.
#include "in_container/base/io.hpp"
#include "in_container/commands/cli.hpp"
#include "in_container/process/spawn.hpp"

#include <exception>
#include <malloc.h>
#include <string>
#include <string_view>
#include <sys/prctl.h>
#include <vector>

int main(int argc, char** argv) {
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    if (argc > 1 && std::string_view(argv[1]) == "launch-subject") {
        // Started by spawn_subject with exactly the descriptors it needs (the rest closed at its exec).
        const std::vector<std::string_view> args(argv + 2, argv + argc);
        return maka_eval::in_container::launch_subject_command(args);
    }
    (void)::mallopt(M_MMAP_THRESHOLD, 64 << 20);
    (void)::mallopt(M_TRIM_THRESHOLD, 64 << 20);
    maka_eval::in_container::close_inherited_descriptors();
    try {
        const std::vector<std::string_view> args(argv + 1, argv + argc);
        return maka_eval::in_container::run_cli(args);
    } catch (const std::exception& error) {
        maka_eval::in_container::log_line(std::string("fatal: ") + error.what());
        return maka_eval::in_container::exit_failed;
    }
}
