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

TEST_CASE("secret_text wipes itself when cleared, and leaves nothing behind when moved from") {
    using maka_eval::contracts::secret_text;
    secret_text held(std::string("canary-secret-value-longer-than-the-small-string-buffer"));
    const char* data = held.view().data();
    const std::size_t size = held.view().size();
    held.clear();
    CHECK(held.empty());
    for (std::size_t i = 0; i < size; ++i) {
        CHECK(data[i] == '\0'); // cleared, not merely emptied
    }
    secret_text from(std::string("another-canary-secret-long-enough-for-the-heap"));
    secret_text to(std::move(from));
    CHECK(to.view() == "another-canary-secret-long-enough-for-the-heap");
    CHECK(from.empty()); // NOLINT(bugprone-use-after-move): what a move leaves is the point
    secret_text over(std::string("a-third-canary-secret-long-enough-for-the-heap"));
    over = std::move(to); // the replaced text is wiped before its buffer is freed
    CHECK(over.view() == "another-canary-secret-long-enough-for-the-heap");
    CHECK(to.empty()); // NOLINT(bugprone-use-after-move)
}

} // namespace
