// Where a command name is found the way execvp(3) and sh look for it: a name with a slash as it is, else
// each directory of PATH in order (an empty entry is the working directory; no PATH: /bin:/usr/bin). The
// helper tries the candidates itself (it must exec with the subject's own environment, after fork); the
// relay takes the first that is an executable regular file.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace maka_eval::posix {

[[nodiscard]] std::vector<std::string> exec_candidates(const std::string& name, const char* path);

// The first candidate that is a regular file we may execute; nullopt when none is.
[[nodiscard]] std::optional<std::string> find_executable(const std::string& name, const char* path);

} // namespace maka_eval::posix
