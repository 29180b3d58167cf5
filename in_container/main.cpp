// maka-eval-helper entry point: arguments to views, exceptions to a message and exit code 1.
#include "in_container/cli.hpp"
#include "in_container/io.hpp"

#include <exception>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    try {
        const std::vector<std::string_view> args(argv + 1, argv + argc);
        return maka_eval::in_container::run_cli(args);
    } catch (const std::exception& error) {
        maka_eval::in_container::log_line(std::string("fatal: ") + error.what());
        return maka_eval::in_container::exit_failed;
    }
}
