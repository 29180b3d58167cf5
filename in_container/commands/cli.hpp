// maka-eval-helper's command line: subcommand dispatch, usage text, exit codes.
//
// Exit codes: 0 success, 1 the operation failed (the message says why), 2 usage error. Subcommands that run
// a subject report its outcome in JSON, not in their own exit code.
#pragma once

#include <span>
#include <string_view>

namespace maka_eval::in_container {

inline constexpr int exit_ok = 0;
inline constexpr int exit_failed = 1;
inline constexpr int exit_usage = 2;

[[nodiscard]] int run_cli(std::span<const std::string_view> args);

// Subcommands; `args` excludes the subcommand's own name.
[[nodiscard]] int frame_command(std::span<const std::string_view> args);
[[nodiscard]] int project_command(std::span<const std::string_view> args);
[[nodiscard]] int probe_command(std::span<const std::string_view> args);
[[nodiscard]] int pin_proxy_command(std::span<const std::string_view> args);
[[nodiscard]] int session_command(std::span<const std::string_view> args);
[[nodiscard]] int run_command(std::span<const std::string_view> args);
[[nodiscard]] int cancel_command(std::span<const std::string_view> args);
[[nodiscard]] int adopt_command(std::span<const std::string_view> args);
[[nodiscard]] int install_command(std::span<const std::string_view> args);

} // namespace maka_eval::in_container
