// maka-eval-relay entry point: arguments to views, exceptions to a message and exit code 1.
#include "relay/cli/commands.hpp"
#include "relay/support/exit_codes.hpp"

#include <exception>
#include <iostream>
#include <string_view>
#include <vector>

int main(int argc, char** argv) {
    try {
        const std::vector<std::string_view> args(argv + 1, argv + argc);
        return maka_eval::relay::run_cli(args);
    } catch (const std::exception& error) {
        std::cerr << "maka-eval-relay: fatal: " << error.what() << "\n";
        return maka_eval::relay::exit_internal;
    }
}
