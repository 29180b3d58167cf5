// SHA-256 over OpenSSL: known answers and incremental equals one-shot.
#include "contracts/digest.hpp"
#include "support/result_printing.hpp"

#include <doctest/doctest.h>

namespace {

using namespace maka_eval::contracts;

TEST_CASE("known SHA-256 answers") {
    CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST_CASE("incremental digest equals one-shot and hex() leaves the state running") {
    sha256 digest;
    digest.update("a");
    CHECK(digest.hex() == sha256_hex("a"));
    digest.update("bc");
    CHECK(digest.hex() == sha256_hex("abc"));
}

} // namespace
