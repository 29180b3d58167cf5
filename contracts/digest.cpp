// SHA-256 over OpenSSL's SHA256_* functions (see digest.hpp).
//
// Not the EVP interface: in a static binary EVP pulls in OpenSSL 3's whole provider machinery (~4 MB of the
// helper), while SHA256_* is self-contained. They are deprecated in OpenSSL 3 but kept, and a fixed
// algorithm needs none of what EVP adds.
#define OPENSSL_SUPPRESS_DEPRECATED
#include "contracts/digest.hpp"

#include <array>

#include <openssl/sha.h>

namespace maka_eval::contracts {
namespace {

SHA256_CTX* as_context(void* context) {
    return static_cast<SHA256_CTX*>(context);
}

std::string to_hex(const unsigned char* data, std::size_t size) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(size * 2U);
    for (std::size_t i = 0; i < size; ++i) {
        out.push_back(digits[data[i] >> 4U]);
        out.push_back(digits[data[i] & 0x0FU]);
    }
    return out;
}

} // namespace

void sha256::context_deleter::operator()(void* context) const noexcept {
    delete as_context(context);
}

sha256::sha256() : context_(new SHA256_CTX) {
    SHA256_Init(as_context(context_.get()));
}

sha256::sha256(const sha256& other) : context_(new SHA256_CTX(*as_context(other.context_.get()))) {}

sha256& sha256::operator=(const sha256& other) {
    if (this != &other) {
        if (!context_) { // moved from
            context_.reset(new SHA256_CTX);
        }
        *as_context(context_.get()) = *as_context(other.context_.get());
    }
    return *this;
}

void sha256::update(std::string_view bytes) {
    if (!bytes.empty()) {
        SHA256_Update(as_context(context_.get()), bytes.data(), bytes.size());
    }
}

std::string sha256::hex() const {
    return hex_after({});
}

std::string sha256::hex_after(std::string_view more) const {
    SHA256_CTX copy = *as_context(context_.get()); // the running state is left untouched
    if (!more.empty()) {
        SHA256_Update(&copy, more.data(), more.size());
    }
    std::array<unsigned char, SHA256_DIGEST_LENGTH> digest{};
    SHA256_Final(digest.data(), &copy);
    return to_hex(digest.data(), digest.size());
}

std::string sha256_hex(std::string_view bytes) {
    sha256 digest;
    digest.update(bytes);
    return digest.hex();
}

} // namespace maka_eval::contracts
