// SHA-256 via OpenSSL 3 EVP (see digest.hpp).
#include "contracts/digest.hpp"

#include <array>
#include <stdexcept>

#include <openssl/evp.h>

namespace maka_eval::contracts {
namespace {

EVP_MD_CTX* as_context(void* context) {
    return static_cast<EVP_MD_CTX*>(context);
}

std::string to_hex(const unsigned char* data, unsigned size) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(std::size_t{size} * 2U);
    for (unsigned i = 0; i < size; ++i) {
        out.push_back(digits[data[i] >> 4U]);
        out.push_back(digits[data[i] & 0x0FU]);
    }
    return out;
}

} // namespace

void sha256::context_deleter::operator()(void* context) const noexcept {
    EVP_MD_CTX_free(as_context(context));
}

sha256::sha256() : context_(EVP_MD_CTX_new()) {
    // Allocation or initialisation failure of the digest is not an expected condition: it is fatal.
    if (!context_ || EVP_DigestInit_ex(as_context(context_.get()), EVP_sha256(), nullptr) != 1) {
        throw std::runtime_error("OpenSSL SHA-256 is unavailable");
    }
}

void sha256::update(std::string_view bytes) {
    if (!bytes.empty()) {
        EVP_DigestUpdate(as_context(context_.get()), bytes.data(), bytes.size());
    }
}

std::string sha256::hex() const {
    std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> copy(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned size = 0;
    if (!copy || EVP_MD_CTX_copy_ex(copy.get(), as_context(context_.get())) != 1 ||
        EVP_DigestFinal_ex(copy.get(), digest.data(), &size) != 1) {
        throw std::runtime_error("OpenSSL SHA-256 failed");
    }
    return to_hex(digest.data(), size);
}

std::string sha256_hex(std::string_view bytes) {
    sha256 digest;
    digest.update(bytes);
    return digest.hex();
}

} // namespace maka_eval::contracts
