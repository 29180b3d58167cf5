// maka-eval-helper entry point: arguments to views, exceptions to a message and exit code 1.
//
// Before anything is read, the process is made non-dumpable (no core file, no ptrace and no /proc/<pid>/fd,
// mem or environ for anyone but root: a subject of the same uid cannot read the `run` line off our stdin)
// and every inherited descriptor above stderr is closed (whatever started us may have leaked sockets or
// pipes; a subject must never inherit, say, the relay's connection to the orchestrator).
#include "in_container/cli.hpp"
#include "in_container/io.hpp"

#include <exception>
#include <string>
#include <sys/prctl.h>
#include <vector>

int main(int argc, char** argv) {
    ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    maka_eval::in_container::close_inherited_descriptors();
    try {
        const std::vector<std::string_view> args(argv + 1, argv + argc);
        return maka_eval::in_container::run_cli(args);
    } catch (const std::exception& error) {
        maka_eval::in_container::log_line(std::string("fatal: ") + error.what());
        return maka_eval::in_container::exit_failed;
    }
}
