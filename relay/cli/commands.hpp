// maka-eval-relay's commands: `connect` (production) and `run` (manual debugging); exit codes in
// exit_codes.hpp.
#pragma once

#include <span>
#include <string_view>

namespace maka_eval::relay {

[[nodiscard]] int run_cli(std::span<const std::string_view> args);
[[nodiscard]] int connect_command(std::span<const std::string_view> args);
[[nodiscard]] int run_command(std::span<const std::string_view> args);
// `--help` or `-h` among a command's options (before `--`): the caller prints its usage and exits 0.
[[nodiscard]] bool wants_help(std::span<const std::string_view> args);

} // namespace maka_eval::relay
