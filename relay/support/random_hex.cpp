// Random hex over OpenSSL's CSPRNG (see random_hex.hpp).
#include "relay/support/random_hex.hpp"

#include <stdexcept>

#include <openssl/rand.h>

namespace maka_eval::relay {

std::string random_hex(std::size_t bytes) {
    std::string raw(bytes, '\0');
    if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes)) != 1) {
        throw std::runtime_error("OpenSSL's random generator failed");
    }
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    for (const char c : raw) {
        const auto byte = static_cast<unsigned char>(c);
        out.push_back(digits[byte >> 4U]);
        out.push_back(digits[byte & 0xFU]);
    }
    return out;
}

} // namespace maka_eval::relay
