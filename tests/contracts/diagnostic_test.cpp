// Diagnostic categories and shapes.
#include "contracts/diagnostic.hpp"
#include "support/result_printing.hpp"

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::contracts;

TEST_CASE("category names round-trip and unknown names are refused") {
    for (auto kind : {category::none, category::unstructured_output, category::result_frame_missing,
                      category::result_frame_invalid, category::result_frame_ambiguous,
                      category::result_frame_oversize, category::execution_scope_unavailable}) {
        CHECK(category_from_string(to_string(kind)) == kind);
    }
    CHECK_FALSE(category_from_string("result-frame-bogus"));
    CHECK(to_string(category::execution_scope_unavailable) == "execution-scope-unavailable");
}

TEST_CASE("evidence is a size and a hash of the bytes") {
    const auto d = diagnostic::over(category::unstructured_output, "abc");
    CHECK(d.bytes == 3);
    CHECK(d.sha256 == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

} // namespace
