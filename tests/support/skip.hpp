// A test whose environment is missing says why and skips (exit 77, ctest's SKIP_RETURN_CODE for every test
// here): it never fails for the machine it runs on, and never passes without having run.
#pragma once

#include <string_view>

namespace maka_eval::test {

// Prints "skipped: WHY" on stderr and exits 77.
[[noreturn]] void skip(std::string_view why);

// Skips unless this process runs as root; `why` says what needs it.
void require_root(std::string_view why);

} // namespace maka_eval::test
