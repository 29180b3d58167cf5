// Network-namespace identity: strict, and malformed never matches (C13, C17).
#include "policy/namespace_identity.hpp"
#include "support/result_printing.hpp"

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::policy;

TEST_CASE("only net:[digits] is an identity") {
    CHECK(is_namespace_identity("net:[4026532001]"));
    for (const char* bad :
         {"", "shared", "net:[]", "net:[12a]", "net:[1] ", "mnt:[1]", "net:[1]\n", "net:1"}) {
        CAPTURE(bad);
        CHECK_FALSE(is_namespace_identity(bad));
    }
}

TEST_CASE("C17: equal but malformed answers never count as the same namespace") {
    for (const char* value : {"", "shared", "net:[]"}) {
        CHECK_FALSE(same_namespace(value, value));
    }
    CHECK(same_namespace("net:[4026532001]", "net:[4026532001]"));
    CHECK_FALSE(same_namespace("net:[4026532099]", "net:[4026532001]"));
}

} // namespace
