// Skipping a test whose environment is missing (see skip.hpp).
#include "support/skip.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <unistd.h>

namespace maka_eval::test {

void skip(std::string_view why) {
    const std::string line = "skipped: " + std::string(why) + "\n";
    (void)std::fwrite(line.data(), 1, line.size(), stderr);
    std::exit(77);
}

void require_root(std::string_view why) {
    if (::geteuid() != 0) {
        skip(std::string(why) + " (needs root; the test command runs as root)");
    }
}

} // namespace maka_eval::test
