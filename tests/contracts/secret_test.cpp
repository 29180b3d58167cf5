// Secret wiping.
#include "contracts/secret.hpp"

#include <doctest/doctest.h>

namespace {

TEST_CASE("wipe overwrites the whole buffer and empties the string") {
    std::string secret = "canary-secret-value-longer-than-the-small-string-buffer";
    const char* data = secret.data();
    const std::size_t size = secret.size();
    maka_eval::contracts::wipe(secret);
    CHECK(secret.empty());
    // clear() keeps the allocation, so the old bytes can be inspected: all zero.
    for (std::size_t i = 0; i < size; ++i) {
        CHECK(data[i] == '\0');
    }
}

} // namespace
