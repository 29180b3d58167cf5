// Test support: run a program with given stdin and environment, capture stdout, stderr and exit status.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace maka_eval::test {

struct process_result {
    int exit_code = -1; // 128 + n when killed by signal n
    std::string out;
    std::string err;
};

// argv and envp arrays for execve, pointing into the given strings (which must outlive them).
struct exec_arrays {
    std::vector<char*> argv;
    std::vector<char*> envp; // empty: inherit
};
exec_arrays exec_arrays_of(const std::vector<std::string>& argv,
                           const std::optional<std::vector<std::string>>& env);

// A child with its stdin, stdout and stderr on pipes; the parent's ends are returned (close-on-exec).
struct piped_child {
    pid_t pid = -1;
    int in = -1;
    int out = -1;
    int err = -1;
};
piped_child spawn_piped(const std::vector<std::string>& argv,
                        const std::optional<std::vector<std::string>>& env);

// `env` replaces the environment when given. Waits at most `timeout_ms`, then kills and reports -1.
process_result run_process(const std::vector<std::string>& argv, const std::string& input = {},
                           const std::optional<std::vector<std::string>>& env = std::nullopt,
                           int timeout_ms = 20000);

} // namespace maka_eval::test
